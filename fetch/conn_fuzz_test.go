package fetch

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestFrame feeds arbitrary frames through the request decoding
// path of conn.handle (header, tag section, kmsg body): it must never
// panic, and what it hands on is always a suffix of the frame.
func FuzzRequestFrame(f *testing.F) {
	for _, req := range []kmsg.Request{
		kmsg.NewPtrApiVersionsRequest(),
		fetchReq(12, "t", 0, 5, 100, 1, 1<<20, 1<<20),
		fetchReq(4, "t", 3, 0, 0, 0, 100, 100),
		kmsg.NewPtrMetadataRequest(),
		kmsg.NewPtrOffsetCommitRequest(),
	} {
		f.Add(encodeRequest(req, 1, "seed")[4:])
	}
	f.Add(rawRequest(18, 3, 1, []byte{0x05, 0xff})[4:])
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, rest, err := parseHeader(frame)
		if err != nil {
			return
		}
		if !bytes.HasSuffix(frame, rest) {
			t.Fatal("header rest is not a suffix of the frame")
		}
		a := apis[h.key]
		if a == nil || h.version < a.min || h.version > a.max {
			return
		}
		req := kmsg.RequestForKey(h.key)
		req.SetVersion(h.version)
		if req.IsFlexible() {
			body, err := skipTags(rest)
			if err != nil {
				return
			}
			if !bytes.HasSuffix(rest, body) {
				t.Fatal("tag skip result is not a suffix")
			}
			rest = body
		}
		_ = req.ReadFrom(rest)
	})
}
