package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkMountCatAppend measures `cat FILE >> data` for 100-byte lines
// (lines/s), and BenchmarkMountCatRead `cat data > /dev/null` (MB/s).
// Each iteration is one run of the tool over 500,000 lines (50 MB):
//
//	go test ./tests -run '^$' -bench Mount -benchtime 3x
const benchLines = 500000

func benchInput(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "lines")
	line := strings.Repeat("x", 90)
	var sb strings.Builder
	for i := 0; i < benchLines; i++ {
		fmt.Fprintf(&sb, "%08d %s\n", i, line) // 100 bytes with the newline
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkMountCatAppend(b *testing.B) {
	input := benchInput(b)
	m := mntNew(b)
	m.ok(`mkdir "$M/bench"`)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		m.ok(`cat ` + input + ` >> "$M/bench/0/data"`)
		total += time.Since(start)
	}
	b.ReportMetric(float64(benchLines*b.N)/total.Seconds(), "lines/s")
	b.ReportMetric(float64(benchLines*100*b.N)/total.Seconds()/1e6, "MB/s")
}

func BenchmarkMountCatRead(b *testing.B) {
	input := benchInput(b)
	m := mntNew(b)
	m.ok(`mkdir "$M/bench" && cat ` + input + ` >> "$M/bench/0/data"`)
	var daemon, cached time.Duration
	for i := 0; i < b.N; i++ {
		// A fresh mount has no page cache of data: the daemon serves
		// the first cat (from warm segment files); the second comes
		// from the kernel's page cache (FOPEN_KEEP_CACHE).
		m.unmount()
		m.mount()
		start := time.Now()
		m.ok(`cat "$M/bench/0/data" > /dev/null`)
		daemon += time.Since(start)
		start = time.Now()
		m.ok(`cat "$M/bench/0/data" > /dev/null`)
		cached += time.Since(start)
	}
	b.ReportMetric(float64(benchLines*100*b.N)/daemon.Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(benchLines*100*b.N)/cached.Seconds()/1e6, "cached-MB/s")
}
