package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What `kafka-configs.sh --describe --entity-type users|clients` asks, sent
// by franz-go as an admin client does: client quotas and SCRAM credentials
// of a cluster that has neither. Kafka answers an empty list (and
// RESOURCE_NOT_FOUND for a user named); both keys used to be unadvertised,
// so the client refused the calls before sending ("broker is too old").
func TestKafkaQuotasAndSCRAMNone(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	str := func(s string) *string { return &s }

	for _, tc := range []struct {
		name  string
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
	}{
		{"every entity", nil, 0},
		{"user alice", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: kmsg.QuotasMatchTypeExact, Match: str("alice")}}, 0},
		{"default client-id", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: kmsg.QuotasMatchTypeDefault}}, 0},
		{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "ip", MatchType: kmsg.QuotasMatchTypeAny}, {EntityType: "user", MatchType: kmsg.QuotasMatchTypeAny}}, kerr.InvalidRequest.Code},
		{"unknown entity type", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: kmsg.QuotasMatchTypeAny}}, kerr.UnsupportedVersion.Code},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = tc.comps
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DescribeClientQuotas %s: %v", tc.name, err)
		}
		if resp.ErrorCode != tc.code || len(resp.Entries) != 0 || (tc.code != 0) != (resp.ErrorMessage != nil) {
			t.Fatalf("DescribeClientQuotas %s: error %v %v, entries %+v; want %v and no entries", tc.name,
				kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, resp.Entries, kerr.ErrorForCode(tc.code))
		}
	}

	all := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	resp, err := all.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeUserScramCredentials of all users: %v", err)
	}
	if resp.ErrorCode != 0 || len(resp.Results) != 0 {
		t.Fatalf("DescribeUserScramCredentials of all users: error %d, results %+v; want none", resp.ErrorCode, resp.Results)
	}
	named := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"alice", "bob", "alice"} {
		named.Users = append(named.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
	}
	resp, err = named.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeUserScramCredentials alice bob alice: %v", err)
	}
	got := map[string]int16{}
	for _, r := range resp.Results {
		got[r.User] = r.ErrorCode
	}
	if resp.ErrorCode != 0 || len(resp.Results) != 2 || got["alice"] != kerr.DuplicateResource.Code || got["bob"] != kerr.ResourceNotFound.Code {
		t.Fatalf("DescribeUserScramCredentials alice bob alice: %+v; want alice DUPLICATE_RESOURCE, bob RESOURCE_NOT_FOUND", resp.Results)
	}
}
