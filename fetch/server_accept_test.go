package fetch

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/segfs/segfs/logstore"
)

// failingListener fails its first fails Accepts with err, then accepts.
type failingListener struct {
	net.Listener
	fails atomic.Int32
	err   error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

// An accept that fails with a temporary error (EMFILE: the daemon's file
// table is full, as under many partitions and connections) does not end
// the Kafka server: it backs off and accepts again once it can. One that
// fails for good ends Serve with the error. No test made accept fail.
func TestServeAcceptFailures(t *testing.T) {
	serve := func(t *testing.T, fails int32, err error) (*Server, string, chan error) {
		t.Helper()
		store, serr := logstore.Open(t.TempDir(), logstore.Options{Logger: quietLogger()})
		if serr != nil {
			t.Fatal(serr)
		}
		t.Cleanup(func() { store.Close() })
		ln, lerr := net.Listen("tcp", "127.0.0.1:0")
		if lerr != nil {
			t.Fatal(lerr)
		}
		fl := &failingListener{Listener: ln, err: err}
		fl.fails.Store(fails)
		srv := New(store, Config{Logger: quietLogger()})
		served := make(chan error, 1)
		go func() { served <- srv.Serve(fl) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		})
		return srv, ln.Addr().String(), served
	}

	t.Run("EMFILE", func(t *testing.T) {
		emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
		_, addr, served := serve(t, 3, emfile)
		// The connection waits in the backlog through the failed accepts.
		c := dial(t, addr)
		if r := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("ApiVersions after accept failed with EMFILE: error %d", r.ErrorCode)
		}
		select {
		case err := <-served:
			t.Fatalf("Serve returned %v after a temporary accept failure", err)
		default:
		}
	})
	t.Run("for good", func(t *testing.T) {
		broken := errors.New("listener broken")
		_, _, served := serve(t, 1, broken)
		select {
		case err := <-served:
			if !errors.Is(err, broken) {
				t.Fatalf("Serve: %v, want %v", err, broken)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Serve went on after an accept failure that is not temporary")
		}
	})
}
