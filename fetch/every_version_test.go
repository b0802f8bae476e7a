package fetch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every API at every version ApiVersions advertises answers a request
// holding only its defaults (no topics, no groups, empty names) with a
// response that decodes at that version, under the same correlation id,
// and the connection serves the next request: a client may send any
// advertised version, and one the server could not answer would drop the
// connection, which every Kafka client takes for a dead broker. Tests
// covered the versions API by API where they check answers; no test sent
// each advertised version of each.
func TestEveryAdvertisedVersionAnswers(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	vs := c.roundTrip(av).(*kmsg.ApiVersionsResponse)
	if vs.ErrorCode != 0 || len(vs.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", vs.ErrorCode, len(vs.ApiKeys))
	}
	answered, pairs := 0, 0
	for _, k := range vs.ApiKeys {
		pairs += int(k.MaxVersion-k.MinVersion) + 1
	}
	for _, k := range vs.ApiKeys {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			if req == nil {
				t.Errorf("key %d advertised, unknown to kmsg", k.ApiKey)
				break
			}
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks, r.TimeoutMillis = -1, 1000 // acks=0 has no answer
			case *kmsg.FetchRequest:
				r.MaxWaitMillis, r.ReplicaID = 0, -1
			case *kmsg.ApiVersionsRequest:
				r.ClientSoftwareName, r.ClientSoftwareVersion = "test", "1"
			}
			name := kmsg.NameForKey(k.ApiKey)
			// A connection per request: one the server closes fails
			// this request only.
			cc := dial(t, ts.addr)
			corr := cc.send(req)
			frame, err := cc.readFrame()
			if err != nil {
				t.Errorf("%s v%d with defaults: no answer (%v)", name, v, err)
				continue
			}
			if k.ApiKey == 0 && v < 3 {
				// Listed for librdkafka's sake and refused, as Kafka
				// 4.0 does (00_produce.go): UNSUPPORTED_VERSION in an
				// ApiVersions v0 body.
				r := decodeResponse(t, frame, corr, &kmsg.ApiVersionsResponse{Version: 0}).(*kmsg.ApiVersionsResponse)
				if r.ErrorCode != kerr.UnsupportedVersion.Code {
					t.Errorf("%s v%d: error %d, want UNSUPPORTED_VERSION", name, v, r.ErrorCode)
				}
			} else if resp := decodeResponse(t, frame, corr, req.ResponseKind()); resp.GetVersion() != v {
				t.Errorf("%s v%d: answered at v%d", name, v, resp.GetVersion())
			}
			if r := cc.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Errorf("after %s v%d: ApiVersions error %d", name, v, r.ErrorCode)
			}
			cc.conn.Close()
			answered++
		}
	}
	if answered != pairs {
		t.Fatalf("%d of the %d advertised (key, version) pairs answered", answered, pairs)
	}
}
