package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segfs/segfs/logstore"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
const DefaultMaxRequestBytes = 100 << 20

// DefaultMaxWriteIdle is Kafka's connections.max.idle.ms default.
const DefaultMaxWriteIdle = 10 * time.Minute

// nodeID is this broker's id: the server is a single-node cluster.
const nodeID = 0

// Config configures a Server.
type Config struct {
	// Advertise is the host:port put into Metadata and FindCoordinator
	// answers. Empty means the local address of the connection the request
	// came in on, which is right unless clients reach the server through a
	// NAT or proxy.
	Advertise string
	// AutoCreateTopics creates unknown topics on Produce and on Metadata
	// requests that allow it, as Kafka's auto.create.topics.enable does.
	AutoCreateTopics bool
	// MaxRequestBytes is the largest request frame accepted
	// (socket.request.max.bytes); <= 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int32
	// MaxWriteIdle is how long a response may go without a byte reaching
	// the client before the connection is closed; <= 0 means
	// DefaultMaxWriteIdle. A client that stops reading (stopped, hung, or
	// gone without a FIN) otherwise blocks its connection's goroutine for
	// good, and a Fetch response it never reads keeps its segment files
	// open: segments that retention or compaction removed stay on disk.
	// Kafka closes such a connection after connections.max.idle.ms.
	MaxWriteIdle time.Duration
	// Logger receives connection and request errors; nil = slog.Default().
	Logger *slog.Logger
	// LogLevel, if set, is the level Logger logs from (its handler's
	// Leveler): IncrementalAlterConfigs of the broker logger "root"
	// changes it live, as kafka-configs --entity-type broker-loggers
	// does in Kafka. nil: the level is fixed and such a change refused.
	LogLevel *slog.LevelVar

	// CopyRecords sends record bytes with pread + write instead of
	// sendfile. It exists to measure what zero copy buys (benchmarks) and
	// is never needed for correctness.
	CopyRecords bool
	// ClusterID is reported in Metadata; empty = "segfs".
	ClusterID string
	// GroupInitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms:
	// how long the first rebalance of an empty consumer group waits for
	// more members. 0 means DefaultGroupInitialRebalanceDelay, negative
	// means no delay.
	GroupInitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout and GroupMaxSessionTimeout are Kafka's
	// group.min.session.timeout.ms and group.max.session.timeout.ms: a
	// classic group member asking for a session timeout outside them is
	// refused (INVALID_SESSION_TIMEOUT). <= 0 means
	// DefaultGroupMinSessionTimeout, DefaultGroupMaxSessionTimeout; the
	// caller keeps min <= max (the CLI refuses the opposite).
	GroupMinSessionTimeout, GroupMaxSessionTimeout time.Duration
	// ConsumerGroupSessionTimeout is Kafka's
	// group.consumer.session.timeout.ms: a member of a KIP-848 consumer
	// group whose heartbeats stop for this long is removed and its
	// partitions reassigned. <= 0 means DefaultConsumerGroupSessionTimeout.
	ConsumerGroupSessionTimeout time.Duration
	// ConsumerGroupHeartbeatInterval is Kafka's
	// group.consumer.heartbeat.interval.ms, the interval consumer group
	// members are told to heartbeat at. <= 0 means
	// DefaultConsumerGroupHeartbeatInterval.
	ConsumerGroupHeartbeatInterval time.Duration
	// OffsetsRetention is Kafka's offsets.retention.minutes: how long a
	// committed offset is kept once its group no longer needs it
	// (expiry.go). <= 0 means DefaultOffsetsRetention.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is Kafka's
	// offsets.retention.check.interval.ms: how often expired offsets
	// and groups are looked for. <= 0 means
	// DefaultOffsetsRetentionCheckInterval.
	OffsetsRetentionCheckInterval time.Duration
}

// Stats counts bytes sent, split by how they left the process. They prove
// zero copy: for a large fetch, UserBytes stays at the size of the framing.
type Stats struct {
	UserBytes     int64 // written from user-space buffers (headers, framing, copied records)
	SendfileBytes int64 // sent by sendfile(2) from segment files
	Requests      int64 // requests handled
	Connections   int64 // connections currently open
}

// Server serves one logstore.Store over the Kafka protocol.
type Server struct {
	store   *logstore.Store
	cfg     Config
	log     *slog.Logger
	offsets *offsetStore
	groups  *groups

	// adminMu serializes CreatePartitions, which reads a topic's
	// partition count and then grows it, as Kafka's single-threaded
	// controller does: without it two of them checked the same count and
	// then interleaved their additions (a valid one failed with "partition
	// already exists"). The config alterations need no lock here: each is
	// one Topic.UpdateConfig, atomic against the others and against the
	// mount's config file alike.
	adminMu sync.Mutex

	userBytes     atomic.Int64
	sendfileBytes atomic.Int64
	requests      atomic.Int64
	connections   atomic.Int64

	// now is the clock of the offsets' retention: commit times, the
	// time a group became Empty, the expiry checks. Tests replace it
	// before Serve, to move through days without waiting.
	now func() time.Time

	// bg counts the background goroutines (the expiry loop, writes of
	// group records), which Shutdown waits for; bgClosed, set by
	// Shutdown under bgMu, refuses new ones.
	bgMu     sync.Mutex
	bgClosed bool
	bg       sync.WaitGroup

	// done is closed by Shutdown: long polls answer at once and the accept
	// loop ends.
	done     chan struct{}
	doneOnce sync.Once

	// loadMu guards loaded: LoadOffsets has read the offsets file.
	loadMu sync.Mutex
	loaded bool

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	shutdown bool
	connWG   sync.WaitGroup
}

// CheckAdvertise reports whether addr can be handed to clients as this
// broker's address: HOST:PORT with a host and a port in 1-65535, as Kafka
// requires of advertised.listeners at startup. Without the check a typo
// (a missing port, "host:abc") silently became port 9092, and clients went
// on retrying an address nobody listens on.
func CheckAdvertise(addr string) error {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	if port, err := strconv.ParseUint(portText, 10, 16); err != nil || port == 0 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", addr, portText)
	}
	return nil
}

// New returns a server over store. Committed offsets are loaded by Serve
// (or LoadOffsets before it), so that a damaged offsets file fails Serve
// instead of being ignored.
func New(store *logstore.Store, cfg Config) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxWriteIdle <= 0 {
		cfg.MaxWriteIdle = DefaultMaxWriteIdle
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ClusterID == "" {
		cfg.ClusterID = "segfs"
	}
	if cfg.ConsumerGroupSessionTimeout <= 0 {
		cfg.ConsumerGroupSessionTimeout = DefaultConsumerGroupSessionTimeout
	}
	if cfg.ConsumerGroupHeartbeatInterval <= 0 {
		cfg.ConsumerGroupHeartbeatInterval = DefaultConsumerGroupHeartbeatInterval
	}
	if cfg.GroupInitialRebalanceDelay == 0 {
		cfg.GroupInitialRebalanceDelay = DefaultGroupInitialRebalanceDelay
	}
	if cfg.GroupMinSessionTimeout <= 0 {
		cfg.GroupMinSessionTimeout = DefaultGroupMinSessionTimeout
	}
	if cfg.GroupMaxSessionTimeout <= 0 {
		cfg.GroupMaxSessionTimeout = DefaultGroupMaxSessionTimeout
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = DefaultOffsetsRetention
	}
	if cfg.OffsetsRetentionCheckInterval <= 0 {
		cfg.OffsetsRetentionCheckInterval = DefaultOffsetsRetentionCheckInterval
	}
	s := &Server{
		store:   store,
		cfg:     cfg,
		log:     cfg.Logger,
		offsets: newOffsetStore(store.Dir()),
		now:     time.Now,
		done:    make(chan struct{}),
		conns:   make(map[*conn]struct{}),
	}
	s.groups = newGroups(s, max(cfg.GroupInitialRebalanceDelay, 0))
	// A failed write of the offsets file is undone in the coordinator's
	// memory under its lock (offsetStore.fail).
	s.offsets.lock = &s.groups.mu
	return s
}

// Stats returns the byte counters.
func (s *Server) Stats() Stats {
	return Stats{
		UserBytes:     s.userBytes.Load(),
		SendfileBytes: s.sendfileBytes.Load(),
		Requests:      s.requests.Load(),
		Connections:   s.connections.Load(),
	}
}

// Addr is the listener's address once Serve has started, else nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections on ln until Shutdown and then returns nil. It
// returns an error if the committed offsets cannot be loaded or accepting
// fails for good.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()

	if err := s.LoadOffsets(); err != nil {
		ln.Close()
		return err
	}
	s.groups.restoreConsumers(s.offsets.consumerGroups())
	s.groups.restoreClassics(s.offsets.classicGroups())
	s.background(s.expireLoop)

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			// Like net/http: a temporary failure (EMFILE, ECONNABORTED)
			// must not end the server; back off so a full fd table does not
			// turn into a busy loop.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("fetch: accept failed; retrying", "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-s.done:
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		c := newConn(s, nc)
		if !s.track(c) {
			nc.Close()
			return nil
		}
		go c.serve()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// track registers c; false once shutting down.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return false
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.connections.Add(1)
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.connections.Add(-1)
	s.connWG.Done()
}

// LoadOffsets reads the committed offsets file, once: Serve calls it
// first. A caller that must refuse to start on a file it cannot read
// before it does anything else (mount, before mounting) calls it before
// Serve; the error names the file.
func (s *Server) LoadOffsets() error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded {
		return nil
	}
	fixed, err := s.offsets.load(s.now().UnixMilli())
	if err != nil {
		return err
	}
	if fixed {
		// Times the file lacked are now the load time; written once, so
		// that the next restart finds them instead of its own load time.
		// A failure costs nothing but that: the next change writes them.
		if err := s.offsets.rewrite(); err != nil {
			s.log.Warn("fetch: offsets file not rewritten with the load time of the offsets and groups it had no time for", "err", err)
		}
	}
	s.loaded = true
	return nil
}

// Shutdown stops accepting, lets every in-flight request finish (long polls
// answer at once with what they have), closes idle connections, and waits
// for all connections to end. If ctx ends first, the remaining connections
// are closed forcibly and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	s.doneOnce.Do(func() { close(s.done) })
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.closeIfIdle()
	}
	s.mu.Unlock()

	s.bgMu.Lock()
	s.bgClosed = true
	s.bgMu.Unlock()

	finished := make(chan struct{})
	go func() {
		s.connWG.Wait()
		// The expiry loop stops with done; a group record being
		// written finishes.
		s.bg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-finished
		return ctx.Err()
	}
}

// background runs f in a goroutine that Shutdown waits for; once
// Shutdown has begun it runs nothing and returns false.
func (s *Server) background(f func()) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return false
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		f()
	}()
	return true
}

// shuttingDown reports whether Shutdown has begun.
func (s *Server) shuttingDown() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}
