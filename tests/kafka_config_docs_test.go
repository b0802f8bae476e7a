package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaDescribeConfigsDocumentation: DescribeConfigs v4 with
// include_documentation, as `kafka-configs.sh --describe --all` and admin
// clients ask it, against a mount's --kafka-listen: every setting of a
// topic made with mkdir and of broker 0 comes with its documentation, one
// sentence; a setting segfs accepts and ignores says so. segfs sent null.
// Without include_documentation none is sent, as in Kafka.
func TestKafkaDescribeConfigsDocumentation(t *testing.T) {
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	m.ok(`mkdir "$M/docs" && echo x >> "$M/docs/0/data"`)
	cl := kafkaClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, withDocs := range []bool{true, false} {
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "docs"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.IncludeDocumentation = withDocs
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			req.Resources = append(req.Resources, rr)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Version < 3 {
				t.Fatalf("DescribeConfigs v%d: no documentation field", resp.Version)
			}
			res := resp.Resources[0]
			if res.ErrorCode != 0 || len(res.Configs) < 10 {
				t.Fatalf("%s %s: error %d, %d configs", r.typ, r.name, res.ErrorCode, len(res.Configs))
			}
			for _, c := range res.Configs {
				switch {
				case !withDocs && c.Documentation != nil:
					t.Errorf("%s %s: documentation not asked for, sent %q", r.typ, c.Name, *c.Documentation)
				case withDocs && (c.Documentation == nil || !strings.HasSuffix(*c.Documentation, ".")):
					t.Errorf("%s %s: documentation %v, want a sentence", r.typ, c.Name, c.Documentation)
				}
				if withDocs && c.Name == "preallocate" && c.Documentation != nil && !strings.Contains(*c.Documentation, "does not apply it") {
					t.Errorf("preallocate, which segfs ignores: %q", *c.Documentation)
				}
			}
		}
	}
}
