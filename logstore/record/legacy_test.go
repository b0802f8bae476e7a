package record

import (
	"bytes"
	"testing"

	"github.com/segfs/segfs/logstore/record/recordtest"
)

// FuzzLegacy runs the legacy message readers over arbitrary bytes: none
// may panic, and they must agree: a message ParseLegacy accepts is one
// PeekLegacy frames and LegacyCRCValid takes for evidence, and a v2 batch
// never is.
func FuzzLegacy(f *testing.F) {
	f.Add(recordtest.LegacyMessage(MagicV1, 0, 3, 1_600_000_000_000, []byte("k"), []byte("value")))
	f.Add(recordtest.LegacyMessage(MagicV0, 0, 0, 0, nil, nil))
	f.Add(recordtest.LegacyMessage(MagicV1, 0, 0, 1_600_000_000_000, nil, []byte("hello")))
	for _, b := range seedBatches(f)[:2] {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		size, magic, framed := PeekLegacy(b)
		_, valid, err := LegacyCRCValid(bytes.NewReader(b), 0, int64(len(b)))
		if err != nil {
			t.Fatalf("LegacyCRCValid: %v", err)
		}
		if valid && !framed {
			t.Fatalf("valid but not framed")
		}
		if valid && Validate(b[:size]) == nil {
			t.Fatalf("both a v2 batch and a legacy message")
		}
		if !framed {
			return
		}
		m, perr := ParseLegacy(b[:min(size, int64(len(b)))])
		if perr == nil && (!valid || m.Magic != magic || m.TotalSize() != size) {
			t.Fatalf("ParseLegacy accepted %+v; framed size %d magic %d, CRC valid %v", m, size, magic, valid)
		}
	})
}
