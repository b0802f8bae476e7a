package record

import (
	"bytes"
	"strings"
	"testing"
)

// checkPlainMatchesKeyed: the plain-lines loop (the bulk append's) writes
// exactly the bytes the general loop writes for lines without a key.
func checkPlainMatchesKeyed(t *testing.T, text []byte) {
	t.Helper()
	// Small buffers, so both loops also grow them on the way.
	pb, pw, pn := appendPlainLines(make([]byte, 7), 3, text)
	kb, kw, kn := appendKeyedLines(make([]byte, 7), 3, text, nil)
	if pn != kn || !bytes.Equal(pb[:pw], kb[:kw]) {
		t.Fatalf("plain loop: %d records, %d bytes; general loop: %d records, %d bytes (equal: %v)",
			pn, pw, kn, kw, bytes.Equal(pb[:pw], kb[:kw]))
	}
}

// TestPlainLinesMatchKeyed covers the varint lengths the plain loop unrolls
// (1 and 2 bytes) and the ones it does not (3 bytes and more): value
// lengths and offset deltas on both sides of 64 and 8192, empty lines, and
// text without a final newline.
func TestPlainLinesMatchKeyed(t *testing.T) {
	var many strings.Builder
	for i := range 9000 { // offset deltas past 63 and 8191
		many.WriteString(strings.Repeat("v", i%5))
		many.WriteByte('\n')
	}
	cases := map[string]string{
		"one":           "hello\n",
		"empty lines":   "\n\n\n",
		"no newline":    "a\nbc",
		"len 63 64 65":  strings.Repeat("a", 63) + "\n" + strings.Repeat("b", 64) + "\n" + strings.Repeat("c", 65) + "\n",
		"len 8191 8192": strings.Repeat("d", 8191) + "\n" + strings.Repeat("e", 8192) + "\n",
		"len 1 MiB":     strings.Repeat("f", 1<<20) + "\n",
		"9000 lines":    many.String(),
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) { checkPlainMatchesKeyed(t, []byte(text)) })
	}
}
