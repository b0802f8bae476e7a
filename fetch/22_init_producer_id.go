package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId (key 22), versions 0-4.
//
// Idempotent producers (no transactional id) get a producer id the data
// directory never handed out before, epoch 0. v3+ requests that carry an
// existing id/epoch (KIP-360, re-initialising after an error) also get a
// fresh id: that is always valid for a client, and the store keeps the
// old id's sequence state apart. Listing this key is what makes franz-go
// idempotent at all (it silently falls back otherwise) and librdkafka's
// enable.idempotence work. Transactions are not served: a transactional id
// is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Kafka's answer to
// a client that may not use it, as FindCoordinator refuses its
// coordinator (10_find_coordinator.go). v5 (KIP-890 epoch bumps) is not
// served.
func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return c.send(h, resp)
	}
	id, err := c.s.store.AllocateProducerID()
	if err != nil {
		c.s.log.Error("fetch: allocating a producer id", "err", err)
		resp.ErrorCode = errorCode(err)
		return c.send(h, resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return c.send(h, resp)
}
