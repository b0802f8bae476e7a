package tests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaDescribeClusterEndpointType: DescribeCluster v1+ names the
// endpoint type it wants described (KIP-919), as Admin.describeCluster
// does with --bootstrap-controller. A Kafka 4 broker
// (AuthHelper.computeDescribeClusterResponse) answers a request for
// controllers MISMATCHED_ENDPOINT_TYPE "The request was sent to an
// endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
// which tells the admin client it reached a broker, and any other type
// but brokers UNSUPPORTED_ENDPOINT_TYPE "Unsupported endpoint type N",
// both with the endpoint type left at 1 and no cluster. segfs answered
// both UNSUPPORTED_ENDPOINT_TYPE with its own message, echoing the type.
func TestKafkaDescribeClusterEndpointType(t *testing.T) {
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		typ  int8
		code int16
		msg  string
	}{
		{2, kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"},
		{3, kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type 3"},
		{0, kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type 0"},
	} {
		for _, v := range []int16{1, 2} {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version, req.EndpointType = v, tc.typ
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ErrorCode != tc.code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg || resp.EndpointType != 1 || resp.ClusterID != "" || len(resp.Brokers) != 0 {
				t.Errorf("DescribeCluster v%d endpoint type %d: %v %v, type %d, cluster %q, %d brokers; want %v %q, type 1, nothing else",
					v, tc.typ, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, resp.EndpointType, resp.ClusterID, len(resp.Brokers), kerr.ErrorForCode(tc.code), tc.msg)
			}
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 2
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || resp.EndpointType != 1 || resp.ControllerID != 0 || len(resp.Brokers) != 1 {
		t.Errorf("DescribeCluster v2 brokers: %v %+v", err, resp)
	}
}
