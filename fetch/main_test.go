package fetch

import (
	"flag"
	"os"
	"testing"

	"github.com/segfs/segfs/internal/tmpfstest"
)

// TestMain puts the tests' stores on a tmpfs (tmpfstest.Use): they waited
// on fsync for a third of their time.
func TestMain(m *testing.M) {
	flag.Parse()
	remove := tmpfstest.Use("fetch")
	code := m.Run()
	remove()
	os.Exit(code)
}
