package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/segfs/segfs/fetch"
	segfs "github.com/segfs/segfs/fs"
	"github.com/segfs/segfs/logstore"
)

// readyFdEnv names the descriptor on which a daemon started by `segfs
// mount` (without --foreground) reports "ready" or its error to the parent.
const readyFdEnv = "SEGFS_READY_FD"

// daemonLogName is the daemon's log file in the data directory. The suffix
// is not one Kafka uses in a log directory.
const daemonLogName = "segfs-mount.out"

func mountCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "mount",
		Usage:     "mount a data directory as files",
		ArgsUsage: "DATA_DIR MOUNTPOINT",
		Description: `Mounts the partition logs of DATA_DIR (created if needed) on MOUNTPOINT:
MOUNTPOINT/TOPIC/N/data is partition N of TOPIC as text, one record a line.
Neither directory may be inside the other.
The command returns once the filesystem answers; the daemon keeps serving in
the background and logs to DATA_DIR/` + daemonLogName + `. With --foreground it
stays attached and logs to stderr. "umount MOUNTPOINT", SIGINT, SIGTERM or
SIGHUP (the terminal of --foreground went away) unmount cleanly: appends in
flight finish, then checkpoints and the clean-shutdown marker are written
(after a signal, files still open there are served for up to
--unmount-grace first). A dead mount left by a killed daemon
("Transport endpoint is not connected") is detached first, and a data
directory still held by a daemon that is shutting down (umount returns
before it has exited) is waited for, up to 30 s. After "umount -l" the daemon
keeps serving the files still open there, and keeps DATA_DIR, until they are
closed; a mount of DATA_DIR meanwhile fails at once, naming the daemon.

Example:

   mkdir -p /mnt/segfs && segfs mount /var/lib/segfs /mnt/segfs
   mkdir /mnt/segfs/orders && seq 3 >> /mnt/segfs/orders/0/data
   tail -f /mnt/segfs/orders/0/data
   umount /mnt/segfs`,
		Flags: append([]ucli.Flag{
			&ucli.BoolFlag{Name: "foreground", Aliases: []string{"f"}, Usage: "stay attached and log to stderr"},
			&ucli.IntFlag{Name: "partitions", Value: 1, Usage: "`N` partitions for topics created with mkdir, and with --kafka-listen for auto-created ones (Kafka's num.partitions)"},
			&ucli.StringFlag{Name: "kafka-listen", Usage: "also serve the Kafka protocol on `ADDR` (host:port)"},
			&ucli.StringFlag{Name: "advertise", Usage: "with --kafka-listen: `ADDR` Kafka clients are told to connect to (default: the address they reached)"},
			&ucli.BoolFlag{Name: "auto-create-topics", Value: true, Usage: "with --kafka-listen: create unknown topics on produce and metadata requests, as Kafka's auto.create.topics.enable"},
			&ucli.IntFlag{Name: "max-request-bytes", Value: fetch.DefaultMaxRequestBytes, Usage: "with --kafka-listen: largest request accepted, in `BYTES` (Kafka's socket.request.max.bytes)"},
			&ucli.BoolFlag{Name: "allow-other", Usage: "let other users use the mount (modes are enforced)"},
			&ucli.DurationFlag{Name: "unmount-grace", Value: 5 * time.Second, Usage: "`DURATION` a signalled daemon keeps serving files still open before it exits"},
			&ucli.BoolFlag{Name: "debug", Usage: "log every FUSE request, with --kafka-listen every Kafka request too, and the file limit set"},
			&ucli.StringFlag{Name: "pprof", Usage: "serve Go profiles on `ADDR` (host:port; for debugging)"},
		}, append(cleanupFlags(), groupFlags()...)...),
		Action: runMount,
	}
}

func runMount(c *ucli.Context) error {
	args, err := applyLateFlags(c)
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if len(args) != 2 {
		return errors.New("mount: usage: segfs mount [flags] DATA_DIR MOUNTPOINT")
	}
	if err := rejectEmptyArgs(args, []string{"DATA_DIR", "MOUNTPOINT"}); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if c.Int("partitions") < 1 {
		return errors.New("mount: --partitions must be at least 1")
	}
	if c.Duration("unmount-grace") < 0 {
		return errors.New("mount: --unmount-grace must not be negative")
	}
	if a := c.String("advertise"); a != "" {
		if err := fetch.CheckAdvertise(a); err != nil {
			return fmt.Errorf("mount: --advertise: %w", err)
		}
	}
	// Checked here too, not only by the daemon: startDaemon creates the
	// data directory and its log before the daemon runs.
	if _, err := cleanupOptions(c); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := checkGroupFlags(c); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := checkMaxRequestBytes(c); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := checkKafkaOnlyFlags(c); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	dataDir, err := filepath.Abs(args[0])
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	mp, err := filepath.Abs(args[1])
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	// Nesting is refused before anything is looked up: as written, then
	// with symbolic links followed, as mount(2) and the store would.
	if err := checkNesting(dataDir, mp); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if mp, err = resolveMountpoint(mp); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	realData, err := resolveDataDir(dataDir)
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := checkNesting(realData, mp); err != nil {
		if realData != dataDir {
			return fmt.Errorf("mount: %w (%s, with symbolic links followed)", err, dataDir)
		}
		return fmt.Errorf("mount: %w", err)
	}
	if err := notPartitionDir(realData); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	// mount(2) comes after the store has opened (and recovered) the data
	// directory; a machine without FUSE (a container without the device)
	// is told so first.
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("mount: FUSE is not available on this machine: %w", err)
	}
	if !c.Bool("foreground") {
		return startDaemon(c, dataDir, mp)
	}
	ready := readyPipe()
	err = mountForeground(c, dataDir, mp, ready)
	if err != nil && ready != nil {
		fmt.Fprintf(ready, "error: %v\n", err)
		ready.Close()
	}
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	return nil
}

// readyPipe returns the parent's pipe when started by startDaemon.
func readyPipe() *os.File {
	v := os.Getenv(readyFdEnv)
	if v == "" {
		return nil
	}
	os.Unsetenv(readyFdEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "ready")
}

// resolveMountpoint follows symbolic links in mp. mount(2) follows them,
// but /proc/self/mountinfo names the target: checked under the link's own
// name, a live mount on the target went unseen and segfs mounted over it.
// It never fails: a dead mount answers lstat with ENOTCONN, so the links
// are then followed by hand up to it and the rest is left as it is.
//
// A path something is mounted on is left alone (the kernel names
// mountpoints with links followed already): lstat of a mount whose daemon
// is stopped blocks for good, and checkMountpoint reports such a mount
// after a bounded wait. Following links through a hung mount elsewhere
// gets the same bounded wait, then an error.
func resolveMountpoint(mp string) (string, error) {
	if mounted, err := segfs.IsMountpoint(mp); err != nil || mounted {
		return mp, nil
	}
	done := make(chan string, 1)
	go func() { done <- followLinks(mp) }()
	select {
	case r := <-done:
		return r, nil
	case <-time.After(5 * time.Second):
		return "", fmt.Errorf("mountpoint %s: looking it up does not finish: a mount on the way does not answer (find it in /proc/self/mountinfo; umount -l it)", mp)
	}
}

// checkNesting refuses a data directory and a mountpoint that are one
// inside the other (absolute, clean paths). A mountpoint inside the data
// directory is taken for a partition (D/x-0) or scanned by the daemon,
// which would then look at its own mount, and can deadlock; a data
// directory inside the mountpoint is hidden by the mount and reached
// through it.
func checkNesting(dataDir, mp string) error {
	within := func(inner, outer string) bool {
		return strings.HasPrefix(inner, outer+string(filepath.Separator)) || outer == string(filepath.Separator)
	}
	switch {
	case dataDir == mp:
		return fmt.Errorf("the data directory and the mountpoint are the same directory, %s: mount it somewhere else", mp)
	case within(dataDir, mp):
		return fmt.Errorf("the data directory %s must not be inside the mountpoint %s", dataDir, mp)
	case within(mp, dataDir):
		return fmt.Errorf("the mountpoint %s must not be inside the data directory %s", mp, dataDir)
	}
	return nil
}

// resolveDataDir follows symbolic links in dir, which need not exist yet
// (mount creates it): its longest existing prefix is resolved and the
// rest appended. Like resolveMountpoint, it gives up after a bounded wait
// on a path through a mount that does not answer.
func resolveDataDir(dir string) (string, error) {
	done := make(chan string, 1)
	go func() {
		rest := ""
		for p := dir; ; p = filepath.Dir(p) {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				done <- filepath.Join(r, rest)
				return
			}
			if filepath.Dir(p) == p {
				done <- dir
				return
			}
			rest = filepath.Join(filepath.Base(p), rest)
		}
	}()
	select {
	case r := <-done:
		return r, nil
	case <-time.After(5 * time.Second):
		return "", fmt.Errorf("data directory %s: looking it up does not finish: a mount on the way does not answer (find it in /proc/self/mountinfo; umount -l it)", dir)
	}
}

func followLinks(mp string) string {
	for hops := 0; hops < 40; hops++ {
		if r, err := filepath.EvalSymlinks(mp); err == nil {
			return r
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(mp))
		if err != nil {
			return mp
		}
		mp = filepath.Join(dir, filepath.Base(mp))
		target, err := os.Readlink(mp)
		if err != nil {
			return mp // not a link: a dead mount, or missing
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		mp = filepath.Clean(target)
	}
	return mp
}

// checkMountpoint clears a dead mount and checks that mp is a directory
// nothing live is mounted on.
func checkMountpoint(mp string, w io.Writer) error {
	detached, err := segfs.DetachStale(mp)
	if err != nil {
		return err
	}
	if detached {
		fmt.Fprintf(w, "segfs: %s was a dead mount (its daemon is gone); detached it\n", mp)
	}
	st, err := os.Stat(mp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mountpoint %s does not exist", mp)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", mp)
	}
	return nil
}

// lockMountpoint takes an exclusive flock on the directory mp, held until
// the returned file is closed: once the mount is in place, or on failure.
// Two segfs started at once on one mountpoint both passed checkMountpoint
// and both mounted, one over the other. The lock is on the directory the
// mount covers: the loser of a race fails here, and a segfs that opens mp
// after the mount gets the mounted root instead, locks that, and its
// second checkMountpoint sees the mount. Held until the daemon exited, it
// failed `umount M && segfs mount D M` while the old daemon was still
// closing its store, which the new one waits for (holderWait).
func lockMountpoint(mp string) (*os.File, error) {
	f, err := os.Open(mp)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("mountpoint %s is being mounted by another segfs", mp)
	}
	// Any other error (ENOLCK on an NFS directory, say): mount without
	// the guard, as before it existed, rather than refuse.
	return f, nil
}

// startDaemon re-executes segfs with --foreground in a new session, with
// its output in the data directory's log, and waits until it reports that
// the mount answers (exit 0) or fails (its error, non-zero exit).
func startDaemon(c *ucli.Context, dataDir, mp string) error {
	// Fail fast on the obvious, with the message on this terminal.
	if err := checkMountpoint(mp, c.App.ErrWriter); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	logPath := filepath.Join(dataDir, daemonLogName)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	defer r.Close()

	args := []string{"mount", "--foreground",
		"--partitions", strconv.Itoa(c.Int("partitions")),
		"--unmount-grace", c.Duration("unmount-grace").String()}
	args = append(args, cleanupArgs(c)...)
	for _, name := range []string{"kafka-listen", "advertise", "pprof"} {
		if v := c.String(name); v != "" {
			args = append(args, "--"+name, v)
		}
	}
	for _, name := range []string{"allow-other", "debug"} {
		if c.Bool(name) {
			args = append(args, "--"+name)
		}
	}
	args = append(args, kafkaArgs(c)...)
	args = append(args, dataDir, mp)
	cmd := exec.Command(exe, args...)
	cmd.Dir = "/"
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w} // fd 3
	cmd.Env = append(os.Environ(), readyFdEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	closeInheritedOnExec()
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("mount: starting the daemon: %w", err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	msg, _ := io.ReadAll(r) // until the daemon closes its end or exits
	text := strings.TrimSpace(string(msg))
	if text == "ready" {
		cmd.Process.Release()
		return nil
	}
	<-exited
	if text == "" {
		return fmt.Errorf("mount: the daemon exited before the mount was ready; see %s", logPath)
	}
	// The daemon's error is mountForeground's, before the "mount: " its
	// caller adds: add it here too, so that a refusal reads the same
	// with and without --foreground.
	return errors.New("mount: " + strings.TrimPrefix(text, "error: "))
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec,
// so that the daemon gets only its stdio and ExtraFiles. Go opens its own
// descriptors close-on-exec, but not those this process inherited without
// it (a shell's extra redirection, make's jobserver pipe, a harness's
// pipe), and exec passes those on: the daemon, which outlives this
// command, held them until the unmount, and a reader of such a pipe
// waited for its EOF as long.
func closeInheritedOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // no /proc: the daemon inherits them, as before
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// mountForeground serves the mount until a signal or an umount. It writes
// "ready" to ready (if any) once the mount answers.
func mountForeground(c *ucli.Context, dataDir, mp string, ready *os.File) error {
	// A LevelVar, shared with the Kafka server: the broker logger "root"
	// (kafka-configs --entity-type broker-loggers) changes it live.
	level := new(slog.LevelVar)
	if c.Bool("debug") {
		level.Set(slog.LevelDebug)
	}
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	logFileLimit(logger)

	if err := checkMountpoint(mp, c.App.ErrWriter); err != nil {
		return err
	}
	mpLock, err := lockMountpoint(mp)
	if err != nil {
		return err
	}
	defer mpLock.Close()
	// Checked again under the lock: another segfs may have mounted
	// between the first check and the lock.
	if err := checkMountpoint(mp, c.App.ErrWriter); err != nil {
		return err
	}
	if addr := c.String("pprof"); addr != "" {
		if err := startPprof(addr, logger); err != nil {
			return err
		}
	}
	// Signals during startup must not kill us with a mount half made.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigc)

	opts, err := cleanupOptions(c)
	if err != nil {
		return err
	}
	// Bind --kafka-listen before anything else: a port in use must fail
	// the mount before recovery runs and before the filesystem is mounted
	// (it used to be mounted, then unmounted again).
	wait := newHolderWait(dataDir, logger)
	// A signal while waiting for a previous holder (up to lockWait) ends
	// the wait, and the mount fails: Ctrl-C used to wait it out, then
	// mount. sigc keeps the signal too, for a mount made meanwhile.
	waitSig := make(chan os.Signal, 1)
	signal.Notify(waitSig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	stopWait := make(chan struct{})
	waitDone := make(chan struct{})
	endWait := sync.OnceFunc(func() { close(waitDone) })
	defer endWait()
	go func() {
		select {
		case <-waitSig:
			close(stopWait)
		case <-waitDone:
		}
		signal.Stop(waitSig)
	}()
	wait.stop = stopWait
	var ln net.Listener
	if addr := c.String("kafka-listen"); addr != "" {
		if ln, err = wait.listen(addr); err != nil {
			return fmt.Errorf("--kafka-listen: %w", err)
		}
		defer func() {
			if ln != nil {
				ln.Close() // not handed to the fetch server
			}
		}()
	}
	opts.Logger, opts.DefaultPartitions = logger, c.Int("partitions")
	store, err := openStore(dataDir, opts, wait)
	endWait()
	if err != nil {
		return err
	}
	// The Kafka server's committed offsets are read before mounting: a
	// file it cannot read fails the mount, naming it, as it fails serve.
	// The server used to fail after the mount, with nothing said: the
	// mount went on, "kafka protocol listening" and the port closed.
	var kafka *fetch.Server
	if ln != nil {
		kafka = newFetchServer(c, store, logger, level)
		if err := kafka.LoadOffsets(); err != nil {
			store.Close()
			return err
		}
	}
	srv, err := segfs.Mount(store, mp, segfs.Options{Logger: logger, Debug: c.Bool("debug"), AllowOther: c.Bool("allow-other")})
	if err != nil {
		store.Close()
		return err
	}
	mpLock.Close() // the mount itself now tells a second segfs off
	stopFetch := startFetch(kafka, ln, logger)
	ln = nil
	// abandoned: the `segfs mount` waiting for "ready" is gone (Ctrl-C or
	// a kill during a long recovery). Its user was told nothing, or that
	// the mount failed: undo the mount rather than leave one nobody
	// expects. The daemon runs in its own session, so the signal that
	// stopped the command never reached it.
	var abandoned error
	if ready != nil {
		_, err := fmt.Fprintln(ready, "ready")
		ready.Close()
		if err != nil {
			abandoned = fmt.Errorf("the segfs mount command that started this daemon is gone (%v); unmounted %s", err, mp)
		}
	}

	var waitFor time.Duration // for Wait, below
	if abandoned != nil {
		logger.Warn("the segfs mount command that started this daemon is gone; unmounting", "mountpoint", mp)
		store.MarkClosing()
		// Nobody has been told the mount exists: no grace for open
		// files, a second for the unmount itself.
		if err := srv.Unmount(time.Second); err != nil {
			logger.Error("unmount", "err", err)
		}
		waitFor = time.Second
	} else {
		waitFor = serveUntilStopped(srv, store, sigc, c.Duration("unmount-grace"), logger)
	}
	stopFetch()
	// Wait returns at once after a clean unmount. After a lazy detach
	// whose grace ran out, files may still be open: do not wait for them.
	waited := make(chan struct{})
	go func() { srv.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(waitFor):
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("closing the store: %w", err)
	}
	logger.Info("store closed", "data", dataDir)
	return abandoned
}

// serveUntilStopped serves until a signal or an umount and returns how
// long to give Wait afterwards: Wait appends the unfinished lines of
// handles the kernel never released and stops the notifier.
func serveUntilStopped(srv *segfs.Server, store *logstore.Store, sigc <-chan os.Signal, grace time.Duration, logger *slog.Logger) time.Duration {
	detached := srv.Detached()
	for {
		select {
		case <-detached:
			// `umount -l` with files open: keep serving them, as the
			// kernel keeps the connection until they close, and tell a
			// segfs started on the directory meanwhile why it is held
			// rather than have it wait for this one to exit.
			store.MarkDetached(srv.Mountpoint())
			detached = nil
			continue
		case sig := <-sigc:
			return stopOnSignal(srv, store, sig, grace, logger)
		case <-srv.Done():
			logger.Info("unmounted by the user")
			store.MarkClosing()
			return grace + time.Second
		}
	}
}

// stopOnSignal unmounts after a signal; see serveUntilStopped.
func stopOnSignal(srv *segfs.Server, store *logstore.Store, sig os.Signal, grace time.Duration, logger *slog.Logger) time.Duration {
	logger.Info("signal received; unmounting", "signal", sig.String())
	// Before the unmount, which can take the grace: a mount
	// started meanwhile waits for this one instead of refusing.
	store.MarkClosing()
	if err := srv.Unmount(grace); err != nil {
		logger.Error("unmount", "err", err)
	}
	// Unmount has already given open files their grace and done
	// what Wait does; Wait returns at once unless the grace ran
	// out with files still open, and then it would block until
	// they close. Waiting another grace for it made a signalled
	// daemon take 2×grace+1 s to exit (11 s by default, past
	// `docker stop`'s 10 s before SIGKILL), and a second more for
	// it only lengthened the grace: a `tail -f` left open made
	// every signalled stop a second longer.
	select {
	case <-srv.Done():
		return time.Second
	default:
		return 0
	}
}

// lockWait bounds how long a mount or serve waits for a segfs that is
// shutting down to let go of the data directory (holderWait).
const lockWait = 30 * time.Second

// markGrace is how long a holder that is alive and not (yet) marked as
// closing is given to mark itself before it is taken to be serving: a
// restart right after `kill -TERM $old` can look before the old process
// has handled the signal. It only delays the refusal of a second segfs
// beside a live one.
const markGrace = time.Second

// holderWait decides, for a mount or serve starting on a data directory
// another process holds, whether to wait for that process to let go.
//
// umount(8) returns once the kernel has detached the mount, while its
// daemon is still closing the store (the fetch server, the last appends,
// checkpoints, fsyncs: a second or more with many partitions) and holds
// the lock until it exits, so `umount M && segfs mount D M` found D
// locked about one time in ten even for a small D; `segfs serve`
// restarted right after a SIGTERM to the running one found it locked, and
// its --listen address still bound, every time. A holder on its way out
// (holderLeaving) is waited for, up to lockWait; one still serving is
// refused, after markGrace.
type holderWait struct {
	dataDir string
	logger  *slog.Logger
	start   time.Time
	stop    <-chan struct{} // closed: give up (serve was signalled)
	waited  bool            // a holder on its way out was waited for
	gaveUp  bool            // ... for lockWait, and is still there
}

func newHolderWait(dataDir string, logger *slog.Logger) *holderWait {
	return &holderWait{dataDir: dataDir, logger: logger, start: time.Now()}
}

// again reports whether to try again, having slept a moment; why is what
// failed (the lock, or the address the holder listens on).
func (w *holderWait) again(why error) bool {
	elapsed := time.Since(w.start)
	if pid, _ := logstore.LockDetached(w.dataDir); pid != 0 {
		// The holder serves files open on a lazily unmounted mount
		// and exits only once they are closed, maybe days from now:
		// refuse at once, saying so (LockedError.Detached).
		return false
	}
	leaving := holderLeaving(w.dataDir)
	if elapsed > lockWait || (!leaving && elapsed > markGrace) {
		w.gaveUp = leaving
		return false
	}
	if leaving && !w.waited {
		w.logger.Info("data directory held by a segfs that is shutting down; waiting for it", "data", w.dataDir, "err", why, "for", lockWait)
		w.waited = true
	}
	select {
	case <-w.stop:
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// done logs that the wait ended well.
func (w *holderWait) done() {
	if w.waited {
		w.logger.Info("the previous owner released the data directory", "data", w.dataDir)
	}
}

// listen binds addr. An address in use while a live process holds the
// data directory may be that process's, on its way out (a restart with
// the same --listen): it is retried as holderWait says. Otherwise it fails
// at once, before the data directory is opened.
func (w *holderWait) listen(addr string) (net.Listener, error) {
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			if err == nil {
				w.done()
			}
			return ln, err
		}
		pid, _ := logstore.LockHolder(w.dataDir)
		if pid == 0 || procArgs(pid) == nil || !w.again(err) {
			return nil, err
		}
	}
}

// openStore opens the data directory, waiting as holderWait says for a
// holder on its way out.
func openStore(dataDir string, opts logstore.Options, w *holderWait) (*logstore.Store, error) {
	for {
		store, err := logstore.Open(dataDir, opts)
		if err == nil {
			w.done()
			return store, nil
		}
		if !errors.Is(err, logstore.ErrLocked) {
			return nil, err
		}
		if !w.again(err) {
			err = describeHolder(err)
			if w.gaveUp {
				err = fmt.Errorf("%w; waited %s for it to exit", err, lockWait)
			}
			return nil, err
		}
	}
}

// holderLeaving reports whether the process holding dataDir's lock looks
// like a segfs on its way out: it marked itself closing
// (Store.MarkClosing); or no segfs mount of dataDir is left in this mount
// namespace and the holder is not `segfs serve`, which holds a data
// directory without mounting it (a mount daemon of an older segfs, which
// did not mark itself, after umount).
func holderLeaving(dataDir string) bool {
	pid, closing := logstore.LockHolder(dataDir)
	if closing {
		return true
	}
	if serving, err := segfs.ServesDir(dataDir); err != nil || serving {
		return false
	}
	if pid == 0 {
		return true // emptied by the holder as it unlocks
	}
	args := procArgs(pid)
	if args == nil {
		return true // gone meanwhile, emptied while unlocking, or not visible here
	}
	return !(len(args) > 1 && args[1] == "serve")
}

// procArgs returns pid's command line, nil if it cannot be read.
func procArgs(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// describeHolder adds to a LockedError from Open what the holder is
// ("segfs serve", "segfs mount"), from its command line.
func describeHolder(err error) error {
	le, ok := err.(*logstore.LockedError)
	if !ok || le.PID <= 0 {
		return err
	}
	args := procArgs(le.PID)
	if args == nil {
		return err
	}
	d := *le
	d.What = filepath.Base(args[0])
	if d.What == "segfs" && len(args) > 1 && (args[1] == "mount" || args[1] == "serve") {
		d.What += " " + args[1]
	}
	return &d
}

// newFetchServer is the Kafka server of --kafka-listen, set up from
// mount's flags.
func newFetchServer(c *ucli.Context, store *logstore.Store, logger *slog.Logger, level *slog.LevelVar) *fetch.Server {
	return fetch.New(store, fetch.Config{
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
}

// startFetch serves the Kafka protocol with srv on ln (nil: --kafka-listen
// was not given) and returns the function that stops it. A server that
// stops on its own (accepting failed for good) says why; the mount goes
// on.
func startFetch(srv *fetch.Server, ln net.Listener, logger *slog.Logger) (stop func()) {
	if ln == nil {
		return func() {}
	}
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if err != nil {
			logger.Error("kafka protocol server stopped; the mount goes on without it", "err", err)
		}
		served <- err
	}()
	logger.Info("kafka protocol listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			logger.Warn("fetch server shutdown", "err", err)
		}
		<-served
	}
}

// groupFlags are the fetch server's consumer group settings, shared by
// mount and serve: Kafka's group.initial.rebalance.delay.ms,
// group.min.session.timeout.ms and group.max.session.timeout.ms (classic
// groups), group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms (KIP-848 consumer groups),
// offsets.retention.minutes and offsets.retention.check.interval.ms.
func groupFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.DurationFlag{Name: "group-initial-rebalance-delay", Value: fetch.DefaultGroupInitialRebalanceDelay,
			Usage: "`DURATION` the first rebalance of an empty classic consumer group waits for more members to join; 0 = none, as single-node Kafka setups often set it (Kafka's group.initial.rebalance.delay.ms)"},
		&ucli.DurationFlag{Name: "group-min-session-timeout", Value: fetch.DefaultGroupMinSessionTimeout,
			Usage: "shortest session timeout (`DURATION`) a classic consumer group member may ask for; a shorter one gets INVALID_SESSION_TIMEOUT (Kafka's group.min.session.timeout.ms)"},
		&ucli.DurationFlag{Name: "group-max-session-timeout", Value: fetch.DefaultGroupMaxSessionTimeout,
			Usage: "longest session timeout (`DURATION`) a classic consumer group member may ask for; a longer one gets INVALID_SESSION_TIMEOUT (Kafka's group.max.session.timeout.ms)"},
		&ucli.DurationFlag{Name: "group-consumer-session-timeout", Value: fetch.DefaultConsumerGroupSessionTimeout,
			Usage: "`DURATION` after which a member of a consumer group (KIP-848 protocol) that stopped heartbeating is removed and its partitions reassigned (Kafka's group.consumer.session.timeout.ms)"},
		&ucli.DurationFlag{Name: "group-consumer-heartbeat-interval", Value: fetch.DefaultConsumerGroupHeartbeatInterval,
			Usage: "`DURATION` between the heartbeats of consumer group members (KIP-848 protocol); shorter than the session timeout (Kafka's group.consumer.heartbeat.interval.ms)"},
		&ucli.DurationFlag{Name: "offsets-retention", Value: fetch.DefaultOffsetsRetention,
			Usage: "`DURATION` a committed offset is kept after its commit, or after its group became empty, unless a member of the group subscribes to its topic; a group left empty without offsets is then deleted (Kafka's offsets.retention.minutes)"},
		&ucli.DurationFlag{Name: "offsets-retention-check-interval", Value: fetch.DefaultOffsetsRetentionCheckInterval,
			Usage: "`DURATION` between the checks for expired offsets and groups (Kafka's offsets.retention.check.interval.ms)"},
	}
}

// checkGroupFlags refuses group settings Kafka would refuse at startup.
func checkGroupFlags(c *ucli.Context) error {
	session, interval := c.Duration("group-consumer-session-timeout"), c.Duration("group-consumer-heartbeat-interval")
	minSession, maxSession := c.Duration("group-min-session-timeout"), c.Duration("group-max-session-timeout")
	switch {
	case c.Duration("group-initial-rebalance-delay") < 0:
		return errors.New("--group-initial-rebalance-delay must not be negative (0 = no delay)")
	case minSession <= 0:
		return errors.New("--group-min-session-timeout must be positive")
	case maxSession <= 0:
		return errors.New("--group-max-session-timeout must be positive")
	case minSession > maxSession:
		return fmt.Errorf("--group-min-session-timeout (%v) must not be longer than --group-max-session-timeout (%v)", minSession, maxSession)
	case c.Duration("offsets-retention") <= 0:
		return errors.New("--offsets-retention must be positive")
	case c.Duration("offsets-retention-check-interval") <= 0:
		return errors.New("--offsets-retention-check-interval must be positive")
	case session <= 0:
		return errors.New("--group-consumer-session-timeout must be positive")
	case interval <= 0:
		return errors.New("--group-consumer-heartbeat-interval must be positive")
	case interval >= session:
		return fmt.Errorf("--group-consumer-heartbeat-interval (%v) must be shorter than --group-consumer-session-timeout (%v)", interval, session)
	}
	return nil
}

// checkMaxRequestBytes refuses a --max-request-bytes Kafka would refuse
// for socket.request.max.bytes (an int, at least 1). 0 or a negative value
// used to mean the default, 100 MiB, and a larger one was cut to the int's
// maximum, both silently.
func checkMaxRequestBytes(c *ucli.Context) error {
	if n := c.Int("max-request-bytes"); n < 1 || n > math.MaxInt32 {
		return fmt.Errorf("--max-request-bytes must be between 1 and %d (Kafka's socket.request.max.bytes), not %d", math.MaxInt32, n)
	}
	return nil
}

// groupInitialDelay is --group-initial-rebalance-delay as fetch.Config
// spells it: there 0 means the default, and no delay is negative.
func groupInitialDelay(c *ucli.Context) time.Duration {
	if d := c.Duration("group-initial-rebalance-delay"); d > 0 {
		return d
	}
	return -1
}

// cleanupFlags are the daemon flags of the background cleaners, shared by
// mount and serve: Kafka's broker settings log.retention.check.interval.ms,
// log.cleaner.backoff.ms and log.cleaner.dedupe.buffer.size.
func cleanupFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.DurationFlag{Name: "retention-check-interval", Value: 5 * time.Minute,
			Usage: "`DURATION` between retention checks, which delete segments past retention.ms and retention.bytes (Kafka's log.retention.check.interval.ms)"},
		&ucli.DurationFlag{Name: "cleaner-interval", Value: 15 * time.Second,
			Usage: "`DURATION` between the compaction cleaner's looks for work (Kafka's log.cleaner.backoff.ms)"},
		&ucli.IntFlag{Name: "cleaner-buffer-size", Value: 16 << 20,
			Usage: "size in `BYTES` of the cleaner's offset map, 24 a key per pass (Kafka's log.cleaner.dedupe.buffer.size)"},
		&ucli.DurationFlag{Name: "producer-id-expiration", Value: 24 * time.Hour,
			Usage: "`DURATION` an idempotent producer's state is kept after its last batch's timestamp (Kafka's producer.id.expiration.ms); checked every 10 minutes or DURATION if shorter"},
	}
}

// cleanupOptions reads the cleanupFlags into store options.
func cleanupOptions(c *ucli.Context) (logstore.Options, error) {
	var o logstore.Options
	for _, name := range []string{"retention-check-interval", "cleaner-interval", "producer-id-expiration"} {
		if c.Duration(name) <= 0 {
			return o, fmt.Errorf("--%s must be positive", name)
		}
	}
	if c.Int("cleaner-buffer-size") < 1024 {
		return o, errors.New("--cleaner-buffer-size must be at least 1024")
	}
	o.RetentionCheckInterval = c.Duration("retention-check-interval")
	o.CleanerInterval = c.Duration("cleaner-interval")
	o.CleanerBufferBytes = c.Int("cleaner-buffer-size")
	o.ProducerIDExpiration = c.Duration("producer-id-expiration")
	return o, nil
}

// cleanupArgs passes the cleanupFlags and groupFlags on to the daemon.
// kafkaOnlyFlags are mount's flags that only the Kafka server reads:
// three of its own and every group flag (groupFlags).
func kafkaOnlyFlags() []string {
	names := []string{"advertise", "auto-create-topics", "max-request-bytes"}
	for _, f := range groupFlags() {
		names = append(names, f.Names()[0])
	}
	return names
}

// checkKafkaOnlyFlags refuses a flag of the Kafka server given to a mount
// without --kafka-listen: the mount went ahead without a server, and the
// flag did nothing, so `--advertise host:9092` with --kafka-listen
// forgotten looked like a running broker that no client could reach.
func checkKafkaOnlyFlags(c *ucli.Context) error {
	if c.String("kafka-listen") != "" {
		return nil
	}
	for _, name := range kafkaOnlyFlags() {
		if c.IsSet(name) {
			return fmt.Errorf("--%s configures the Kafka server, which runs only with --kafka-listen ADDR: give it too, or drop --%s", name, name)
		}
	}
	return nil
}

func cleanupArgs(c *ucli.Context) []string {
	return []string{
		"--retention-check-interval", c.Duration("retention-check-interval").String(),
		"--cleaner-interval", c.Duration("cleaner-interval").String(),
		"--cleaner-buffer-size", strconv.Itoa(c.Int("cleaner-buffer-size")),
		"--producer-id-expiration", c.Duration("producer-id-expiration").String(),
	}
}

// kafkaArgs passes the Kafka server's flags on to the daemon, only with
// --kafka-listen (checkKafkaOnlyFlags refuses them without it).
func kafkaArgs(c *ucli.Context) []string {
	if c.String("kafka-listen") == "" {
		return nil
	}
	args := []string{"--max-request-bytes", strconv.Itoa(c.Int("max-request-bytes"))}
	if !c.Bool("auto-create-topics") {
		args = append(args, "--auto-create-topics=false")
	}
	for _, f := range groupFlags() { // all durations
		name := f.Names()[0]
		args = append(args, "--"+name, c.Duration(name).String())
	}
	return args
}
