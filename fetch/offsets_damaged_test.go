package fetch

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segfs/segfs/logstore"
)

// A committed offsets file the server cannot read (a version it does not
// know, JSON cut short) fails LoadOffsets and Serve, naming the file, and
// is left as it was: serving without it would give every consumer group
// no committed offset, and the next commit would replace the file. Serve
// closes the listener it was given. No test gave a damaged file.
func TestLoadOffsetsDamagedFile(t *testing.T) {
	for name, content := range map[string]string{
		"unknown version": `{"version":99,"groups":{}}`,
		"cut short":       `{"version":1,"groups":{"g":{"t":{"0":{"offset":`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, OffsetsFile)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			store, err := logstore.Open(dir, logstore.Options{Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			srv := New(store, Config{Logger: quietLogger()})
			want := "committed offsets: " + path + ": "
			if err := srv.LoadOffsets(); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("LoadOffsets: %v, want an error saying %q", err, want)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Serve(ln); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Serve: %v, want an error saying %q", err, want)
			}
			if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				c.Close()
				t.Fatal("Serve failed but left its listener open")
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != content {
				t.Fatalf("the offsets file changed: %q %v", b, err)
			}
		})
	}
}
