package fetch

import "github.com/twmb/franz-go/pkg/kmsg"

// ApiVersions (key 18), versions 0-3.
//
// The answer lists the registry (apis.go). Its response header never has a
// tag byte, even at v3 (conn.send; pitfall P2). A request above v3 gets the
// KIP-511 answer from conn.unsupported: a v0 body with UNSUPPORTED_VERSION
// and our ranges, after which clients retry at a version we serve (P3).
// v3's ClientSoftwareName/Version are accepted whatever they hold: Kafka's
// INVALID_REQUEST for odd names only makes librdkafka retry at v0. v4/v5
// add nothing a client needs (v5's ClusterID/NodeID check, P17).
func init() { register(18, 0, 3, handleApiVersions) }

func handleApiVersions(c *conn, h *reqHeader, req kmsg.Request) error {
	resp := req.(*kmsg.ApiVersionsRequest).ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertised()
	return c.send(h, resp)
}
