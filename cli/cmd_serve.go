package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/segfs/segfs/fetch"
)

// serveShutdownTimeout bounds how long a signalled server waits for
// in-flight requests (a long-poll Fetch answers at once on shutdown; only a
// client that stopped reading can hold it up).
const serveShutdownTimeout = 10 * time.Second

func serveCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "serve",
		Usage:     "serve a data directory over the Kafka protocol",
		ArgsUsage: "DATA_DIR",
		Description: `Runs a single-node Kafka broker over DATA_DIR (created if needed, as
mount creates it): Kafka clients (kcat, franz-go, librdkafka, sarama,
kafka-go, ...) list topics, produce, consume with explicit partition
assignment or in consumer groups (kcat -G, subscribe), query offsets by time
and commit offsets. Record bytes go from the segment files to the socket
with sendfile(2). The data directory is locked: stop a mount of it first, or use
"segfs mount --kafka-listen" to serve a mounted directory. A segfs that holds
it and is shutting down (a restart right after "kill -TERM" of the old
server) is waited for, up to 30 s, together with the address it listened on.

Prints "listening on HOST:PORT" once it accepts connections (useful with
port 0). SIGINT, SIGTERM or SIGHUP stop it gracefully.

Example:

   segfs serve --listen 127.0.0.1:9092 ~/.segfs/data
   kcat -b 127.0.0.1:9092 -L`,
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "listen", Value: "127.0.0.1:9092", Usage: "`ADDR` to accept Kafka clients on (host:port; port 0 picks one)"},
			&ucli.StringFlag{Name: "advertise", Usage: "`ADDR` clients are told to connect to (default: the address they reached)"},
			&ucli.BoolFlag{Name: "auto-create-topics", Value: true, Usage: "create unknown topics on produce and metadata requests, as Kafka's auto.create.topics.enable"},
			&ucli.IntFlag{Name: "partitions", Value: 1, Usage: "`N` partitions for auto-created topics"},
			&ucli.IntFlag{Name: "max-request-bytes", Value: fetch.DefaultMaxRequestBytes, Usage: "largest request accepted, in `BYTES` (Kafka's socket.request.max.bytes)"},
			&ucli.BoolFlag{Name: "debug", Usage: "log every request and the file limit set (the level can also be set live: kafka-configs --alter --entity-type broker-loggers --entity-name 0 --add-config root=DEBUG)"},
		}, append(cleanupFlags(), groupFlags()...)...),
		Action: runServe,
	}
}

func runServe(c *ucli.Context) error {
	args, err := applyLateFlags(c)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if len(args) != 1 {
		return errors.New("serve: usage: segfs serve [flags] DATA_DIR")
	}
	if err := rejectEmptyArgs(args, []string{"DATA_DIR"}); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	dir := args[0]
	if err := notPartitionDir(dir); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if c.Int("partitions") < 1 {
		return errors.New("serve: --partitions must be at least 1")
	}
	if a := c.String("advertise"); a != "" {
		if err := fetch.CheckAdvertise(a); err != nil {
			return fmt.Errorf("serve: --advertise: %w", err)
		}
	}
	// A LevelVar, shared with the Kafka server: the broker logger "root"
	// (kafka-configs --entity-type broker-loggers) changes it live.
	level := new(slog.LevelVar)
	if c.Bool("debug") {
		level.Set(slog.LevelDebug)
	}
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	logFileLimit(logger)

	opts, err := cleanupOptions(c)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := checkGroupFlags(c); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := checkMaxRequestBytes(c); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// Caught from before the store opens, so that a signal during
	// recovery stops the server cleanly once it is up instead of killing
	// it with the store open. SIGHUP (the terminal went away) too, as
	// mount does: by default it killed serve without closing the store,
	// and the next start had to recover every partition. A signal while
	// waiting for a previous server to exit ends the wait.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// Listen first: a port in use fails at once, not after recovery
	// (unless a segfs on its way out still holds it: holderWait).
	wait := newHolderWait(dir, logger)
	wait.stop = ctx.Done()
	ln, err := wait.listen(c.String("listen"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	opts.Logger, opts.DefaultPartitions = logger, c.Int("partitions")
	store, err := openStore(dir, opts, wait)
	if err != nil {
		ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	srv := fetch.New(store, fetch.Config{
		Advertise:                      c.String("advertise"),
		AutoCreateTopics:               c.Bool("auto-create-topics"),
		MaxRequestBytes:                int32(c.Int("max-request-bytes")),
		Logger:                         logger,
		LogLevel:                       level,
		GroupInitialRebalanceDelay:     groupInitialDelay(c),
		GroupMinSessionTimeout:         c.Duration("group-min-session-timeout"),
		GroupMaxSessionTimeout:         c.Duration("group-max-session-timeout"),
		ConsumerGroupSessionTimeout:    c.Duration("group-consumer-session-timeout"),
		ConsumerGroupHeartbeatInterval: c.Duration("group-consumer-heartbeat-interval"),
		OffsetsRetention:               c.Duration("offsets-retention"),
		OffsetsRetentionCheckInterval:  c.Duration("offsets-retention-check-interval"),
	})

	// The committed offsets are read before "listening" is printed: a
	// file the server cannot read is refused (naming it) without first
	// telling a script waiting for that line that the server is up.
	if err := srv.LoadOffsets(); err != nil {
		ln.Close()
		if cerr := store.Close(); cerr != nil {
			logger.Warn("serve: closing the store", "err", cerr)
		}
		return fmt.Errorf("serve: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(c.App.Writer, "listening on %s\n", ln.Addr())

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("serve: shutting down")
	case serveErr = <-served:
		served <- nil // Shutdown below still waits for it
	}
	// A segfs started on the directory from now on (a restart that did
	// not wait for this one to exit) waits for it instead of refusing.
	store.MarkClosing()
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	<-served
	closeErr := store.Close()
	switch {
	case serveErr != nil:
		return fmt.Errorf("serve: %w", serveErr)
	case shutErr != nil:
		return fmt.Errorf("serve: shutdown: %w", shutErr)
	case closeErr != nil:
		return fmt.Errorf("serve: closing the store: %w", closeErr)
	}
	return nil
}

// applyLateFlags accepts flags written after DATA_DIR ("segfs serve DIR
// --listen :9092", the documented form), which urfave/cli v2 leaves among
// the arguments, by parsing them with the same names and setting them on
// c. It returns the positional arguments.
func applyLateFlags(c *ucli.Context) ([]string, error) {
	args := c.Args().Slice()
	if !hasFlag(args) {
		return args, nil
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	for _, f := range c.Command.Flags {
		for _, name := range f.Names() {
			if bf, ok := f.(*ucli.BoolFlag); ok {
				fs.Bool(name, bf.Value, "")
			} else {
				fs.String(name, "", "")
			}
		}
	}
	// Positional arguments may come first; flag.Parse stops at the first
	// one, so move them aside and parse the rest.
	var positional, rest []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") && args[i] != "-" {
			rest = append(rest, args[i:]...)
			break
		}
		positional = append(positional, args[i])
	}
	if err := fs.Parse(rest); err != nil {
		return nil, err
	}
	positional = append(positional, fs.Args()...)
	var setErr error
	fs.Visit(func(f *flag.Flag) {
		if err := c.Set(f.Name, f.Value.String()); err != nil && setErr == nil {
			setErr = fmt.Errorf("--%s: %w", f.Name, err)
		}
	})
	return positional, setErr
}

func hasFlag(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			return true
		}
	}
	return false
}
