package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerLoggerAlter sends IncrementalAlterConfigs of one broker logger
// resource to broker 0 (kgo would route it to the broker the name
// names): ops are triples of operation, logger, value ("" = null).
func brokerLoggerAlter(t *testing.T, cl *kgo.Client, name string, validateOnly bool, ops ...any) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, name
	for i := 0; i+2 < len(ops); i += 3 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name = ops[i].(kmsg.IncrementalAlterConfigOp), ops[i+1].(string)
		if v := ops[i+2].(string); v != "" {
			c.Value = kmsg.StringPtr(v)
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := cl.Broker(0).RetriableRequest(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
}

// rootLevel is root's level as DescribeConfigs of broker logger "0"
// lists it, and whether it is read-only.
func rootLevel(t *testing.T, cl *kgo.Client) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "0"
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	if r.ErrorCode != 0 {
		t.Fatalf("describe broker logger 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, c := range r.Configs {
		if c.Name == "root" && c.Value != nil {
			return *c.Value, c.ReadOnly
		}
	}
	t.Fatalf("broker logger 0 lists no root: %+v", r.Configs)
	return "", false
}

// checkBrokerLoggerLevels drives the level of a segfs daemon (log: its
// stderr so far) through kafka-configs' broker-loggers calls: SET root
// changes what the daemon logs at once (a DEBUG line per request appears
// after SET root=DEBUG and stops after SET root=INFO), and every refusal
// is Kafka's (RuntimeLoggerManager), changing nothing.
func checkBrokerLoggerLevels(t *testing.T, addr string, log func() string) {
	cl := kafkaClient(t, addr)
	ping := func() { // any request
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	const debugLine = "msg=\"fetch: request\""
	// waitLog waits (bounded) for the daemon's log to show want, and
	// returns the log from where the line ends.
	waitLog := func(want string) string {
		t.Helper()
		var rest string
		if !mntWaitFor(20*time.Second, func() bool {
			var ok bool
			_, rest, ok = strings.Cut(log(), want)
			return ok
		}) {
			t.Fatalf("the daemon never logged %q:\n%s", want, log())
		}
		return rest
	}

	if lvl, ro := rootLevel(t, cl); lvl != "INFO" || ro {
		t.Fatalf("root before: %s read-only %v, want INFO, changeable", lvl, ro)
	}
	ping()
	if strings.Contains(log(), debugLine) {
		t.Fatalf("a DEBUG line at INFO:\n%s", log())
	}

	// Refusals, each with Kafka's code and message; nothing changes.
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	for _, tc := range []struct {
		name string
		ops  []any
		code int16
		msg  string
	}{
		{"0", []any{set, "root", "debug"}, kerr.InvalidConfig.Code,
			"Cannot set the log level of root to debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, OFF, TRACE, WARN"},
		{"0", []any{set, "kafka.server", "DEBUG"}, kerr.InvalidConfig.Code, "Logger kafka.server does not exist!"},
		{"0", []any{set, "root", "DEBUG", del, "kafka", ""}, kerr.InvalidConfig.Code, "Logger kafka does not exist!"},
		{"0", []any{del, "root", ""}, kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"},
		{"0", []any{kmsg.IncrementalAlterConfigOpAppend, "root", "DEBUG"}, kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{"0", []any{kmsg.IncrementalAlterConfigOpSubtract, "root", "DEBUG"}, kerr.InvalidRequest.Code, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource"},
		{"0", []any{kmsg.IncrementalAlterConfigOp(7), "root", "DEBUG"}, kerr.InvalidRequest.Code, "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource"},
		{"0", []any{set, "root", ""}, kerr.InvalidRequest.Code, "Null value not supported for : root"},
		{"1", []any{set, "root", "DEBUG"}, kerr.InvalidRequest.Code, "Unexpected node id. Expected 0, but received 1"},
		{"x", []any{set, "root", "DEBUG"}, kerr.InvalidRequest.Code, "Node id must be an integer, but it is: x"},
	} {
		r := brokerLoggerAlter(t, cl, tc.name, false, tc.ops...)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("alter %q %v: %v %v, want %v %q", tc.name, tc.ops, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
	if r := brokerLoggerAlter(t, cl, "0", true, set, "root", "DEBUG"); r.ErrorCode != 0 {
		t.Errorf("validate-only SET root=DEBUG: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if lvl, _ := rootLevel(t, cl); lvl != "INFO" {
		t.Fatalf("root after refused and validate-only changes: %s, want INFO", lvl)
	}
	ping()
	if strings.Contains(log(), debugLine) {
		t.Fatalf("a DEBUG line after refused changes:\n%s", log())
	}

	// kafka-configs --alter --entity-type broker-loggers --entity-name 0
	// --add-config root=DEBUG
	if r := brokerLoggerAlter(t, cl, "0", false, set, "root", "DEBUG"); r.ErrorCode != 0 {
		t.Fatalf("SET root=DEBUG: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if lvl, _ := rootLevel(t, cl); lvl != "DEBUG" {
		t.Errorf("root after SET DEBUG: %s", lvl)
	}
	ping()
	waitLog(debugLine)

	if r := brokerLoggerAlter(t, cl, "0", false, set, "root", "INFO"); r.ErrorCode != 0 {
		t.Fatalf("SET root=INFO: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	waitLog("level=INFO")
	ping()
	ping()
	// The next change's WARN line marks the end of what the INFO level
	// logged: no request in between.
	if r := brokerLoggerAlter(t, cl, "0", false, set, "root", "WARN"); r.ErrorCode != 0 {
		t.Fatalf("SET root=WARN: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	atInfo, _, _ := strings.Cut(waitLog("level=INFO"), "level=WARN")
	if strings.Contains(atInfo, debugLine) {
		t.Errorf("DEBUG lines after SET root=INFO:\n%s", atInfo)
	}
	if lvl, _ := rootLevel(t, cl); lvl != "WARN" {
		t.Errorf("root after SET WARN: %s", lvl)
	}
}

// TestKafkaBrokerLoggerServe: `segfs serve`'s log level changes live
// through IncrementalAlterConfigs of broker logger "0", as
// `kafka-configs --alter --entity-type broker-loggers --entity-name 0
// --add-config root=DEBUG` changes a Kafka broker's. segfs refused any
// change (INVALID_REQUEST): its level was fixed at start.
func TestKafkaBrokerLoggerServe(t *testing.T) {
	srv := kafkaServe(t, "")
	checkBrokerLoggerLevels(t, srv.addr, srv.stderr)
}

// TestKafkaBrokerLoggerMount: the same for `segfs mount --kafka-listen`,
// whose daemon logs to segfs-mount.out: the mount and its Kafka server
// share one level.
func TestKafkaBrokerLoggerMount(t *testing.T) {
	mntRequireFuse(t)
	addr := kafkaFreeAddr(t)
	m := mntNew(t, "--kafka-listen", addr)
	kafkaWaitListening(t, addr)
	checkBrokerLoggerLevels(t, addr, func() string {
		b, _ := os.ReadFile(filepath.Join(m.data, "segfs-mount.out"))
		return string(b)
	})
}
