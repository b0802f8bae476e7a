package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics (key 20), versions 0-6.
//
// segfs does not delete topics (an open design question: the mount has
// no rmdir either), so the server answers as a Kafka broker with
// delete.topic.enable=false, which DescribeConfigs of broker 0 shows.
// Kafka refuses the whole request before it looks at any name (the
// controller's deleteTopics), so every topic named, whether it exists or
// not, gets TOPIC_DELETION_DISABLED (v3+), or INVALID_REQUEST before v3,
// whose clients do not know that code. Nothing is deleted.
func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	code := kerr.TopicDeletionDisabled.Code
	if h.version < 3 {
		code = kerr.InvalidRequest.Code
	}
	var msg *string
	if h.version >= 5 {
		msg = kmsg.StringPtr("Topic deletion is disabled: segfs does not delete topics (delete.topic.enable=false).")
	}
	add := func(name *string, id [16]byte) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = name, id, code, msg
		resp.Topics = append(resp.Topics, st)
	}
	if h.version >= 6 {
		for _, rt := range req.Topics {
			add(rt.Topic, rt.TopicID)
		}
	} else {
		for _, name := range req.TopicNames {
			add(kmsg.StringPtr(name), [16]byte{})
		}
	}
	if len(req.TopicNames) > 0 || len(req.Topics) > 0 {
		c.s.log.Info("fetch: topic deletion refused: segfs does not delete topics", "remote", c.remote)
	}
	return c.send(h, resp)
}
