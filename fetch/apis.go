package fetch

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one decoded request. It writes its response itself (with
// conn.send, or for Fetch with the zero-copy writer), or writes nothing when
// the protocol says so (Produce with acks=0). A returned error closes the
// connection: it means the stream can no longer be trusted (write failure,
// a response promised but not sent whole).
type handler func(c *conn, h *reqHeader, req kmsg.Request) error

// api is one advertised API key with the versions served.
type api struct {
	key      int16
	min, max int16
	// adMin is the lowest version ApiVersions lists; it equals min except
	// for Produce, whose listed minimum works around a client bug (see
	// 00_produce.go). Requests below min are refused all the same.
	adMin  int16
	handle handler
}

// apis is the registry the files NN_name.go fill from init, as kfake does:
// ApiVersions is built from it, so what is advertised is exactly what is
// served (with the one exception of adMin). Ranges follow
// KAFKA-PROTOCOL.md §4.2.
var apis = map[int16]*api{}

func register(key, minV, maxV int16, h handler) {
	if _, dup := apis[key]; dup {
		panic("fetch: API key registered twice")
	}
	apis[key] = &api{key: key, min: minV, max: maxV, adMin: minV, handle: h}
}

// advertised returns the registry as ApiVersions entries, sorted by key.
func advertised() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(keys))
	for _, k := range keys {
		a := apis[k]
		e := kmsg.NewApiVersionsResponseApiKey()
		e.ApiKey, e.MinVersion, e.MaxVersion = a.key, a.adMin, a.max
		out = append(out, e)
	}
	return out
}
