package fetch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeClientQuotas (key 48), versions 0-1: Admin.describeClientQuotas,
// which `kafka-configs.sh --describe --entity-type users|clients|ips` and
// kadm's DescribeClientQuotas use.
//
// segfs enforces no quotas and stores none, so every valid filter matches
// nothing: no entries, no error, as Kafka's ClientQuotasImage.describe
// answers a cluster without quotas. The filter is checked first, in
// Kafka's order and with its messages: an empty entity type, one named
// twice, a match string with MATCH_TYPE_DEFAULT or MATCH_TYPE_SPECIFIED or
// none with MATCH_TYPE_EXACT, an unknown match type, or an ip component
// together with a user or client-id one is INVALID_REQUEST; an entity type
// other than user, client-id and ip is UNSUPPORTED_VERSION. Such a refusal
// is the request's error code and message with null entries, as
// DescribeClientQuotasRequest.getErrorResponse builds it. Before this key
// was listed, admin clients refused the call as unsupported.
func init() { register(48, 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if code, msg := checkQuotaFilter(req.Components); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return c.send(h, resp) // Entries nil: null, as Kafka's error answer
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	return c.send(h, resp)
}

// checkQuotaFilter is Kafka's ClientQuotasImage.describe validation of a
// filter: the error code and message of the first rule broken, 0 if none.
func checkQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	seen := map[string]bool{}
	for _, comp := range components {
		switch {
		case comp.EntityType == "":
			return invalid, "Invalid empty entity type."
		case seen[comp.EntityType]:
			return invalid, fmt.Sprintf("Entity type %s cannot appear more than once in the filter.", comp.EntityType)
		case comp.EntityType != "user" && comp.EntityType != "client-id" && comp.EntityType != "ip":
			return kerr.UnsupportedVersion.Code, "Unsupported entity type " + comp.EntityType
		}
		seen[comp.EntityType] = true
		switch comp.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if comp.Match == nil {
				return invalid, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
		case kmsg.QuotasMatchTypeDefault:
			if comp.Match != nil {
				return invalid, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
		case kmsg.QuotasMatchTypeAny:
			if comp.Match != nil {
				return invalid, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
		default:
			return invalid, fmt.Sprintf("Unknown match type %d", int8(comp.MatchType))
		}
	}
	if seen["ip"] && (seen["user"] || seen["client-id"]) {
		return invalid, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return 0, ""
}
