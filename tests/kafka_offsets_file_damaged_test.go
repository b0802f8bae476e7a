package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaDamagedOffsetsFileRefused: a committed offsets file the Kafka
// server cannot read (a version it does not know, JSON cut short) stops
// `segfs mount --kafka-listen`, in the background and in the foreground,
// as it stops `segfs serve`: refused, naming the file and why, and the
// file is left as it was for its owner to repair. Starting without it
// would hand every group's consumers no committed offset (they reset
// by auto.offset.reset) and its next commit would overwrite it. mount
// used to go on with the filesystem mounted, log "kafka protocol
// listening" and close the port, saying nothing: the server's error was
// never read.
func TestKafkaDamagedOffsetsFileRefused(t *testing.T) {
	for name, content := range map[string]string{
		"unknown version": `{"version":99,"groups":{}}`,
		"cut short":       `{"version":1,"groups":{"g":{"t":{"0":{"offset":`,
	} {
		t.Run(name, func(t *testing.T) {
			data, mp := t.TempDir(), t.TempDir()
			path := filepath.Join(data, "segfs-consumer-offsets.json")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			addr := kafkaFreeAddr(t)
			for _, args := range [][]string{
				{"mount", "--kafka-listen", addr, data, mp},
				{"mount", "--foreground", "--kafka-listen", addr, data, mp},
				{"serve", "--listen", addr, data},
			} {
				cliRefused(t, mp, "committed offsets: "+path+": ", args...)
				if args[0] == "serve" {
					// A script that waits for "listening on" before
					// connecting must not be told the server is up.
					out, _ := exec.Command("timeout", "-k", "5", "60", segfsBin, "serve", "--listen", addr, data).CombinedOutput()
					if strings.Contains(string(out), "listening on") {
						t.Fatalf("segfs serve said it was listening before refusing the offsets file: %q", out)
					}
				}
				if b, err := os.ReadFile(path); err != nil || string(b) != content {
					t.Fatalf("segfs %q changed the offsets file it refused: %q %v", args, b, err)
				}
			}
		})
	}
}
