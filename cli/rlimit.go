package cli

import (
	"log/slog"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fileLimitCap is the most raiseFileLimit lifts the hard RLIMIT_NOFILE
// to: the kernel's default fs.nr_open, and more than the 100,000 Kafka's
// documentation asks for a broker.
const fileLimitCap = 1 << 20

// fileLimitChange is what raiseFileLimit found and set, for the log of
// the command that has one.
type fileLimitChange struct {
	before, after unix.Rlimit
	// hardErr is why the hard limit was not raised (EPERM without
	// CAP_SYS_RESOURCE), nil if it was or needed not be.
	hardErr error
	err     error // the limit could not be read
}

// fileLimit is what raiseFileLimit did in this process.
var fileLimit fileLimitChange

// rlimitOps are the system calls raiseFileLimitWith makes, replaced in
// its unit test.
type rlimitOps struct {
	get    func(*unix.Rlimit) error
	set    func(*unix.Rlimit) error
	nrOpen func() (uint64, error) // the kernel's ceiling, fs.nr_open
}

var systemRlimit = rlimitOps{
	get: func(l *unix.Rlimit) error { return unix.Getrlimit(unix.RLIMIT_NOFILE, l) },
	// unix.Setrlimit goes through the syscall package, which then stops
	// restoring the limit it found at start in the processes os/exec
	// starts (Go 1.19+ raises its own soft limit and hands children the
	// original one): the daemon `segfs mount` starts inherits what this
	// process set, which it would raise to anyway.
	set: func(l *unix.Rlimit) error { return unix.Setrlimit(unix.RLIMIT_NOFILE, l) },
	nrOpen: func() (uint64, error) {
		b, err := os.ReadFile("/proc/sys/fs/nr_open")
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	},
}

// raiseFileLimit lifts RLIMIT_NOFILE as far as this process may. Every
// partition holds about three descriptors (its active segment's .log and
// indexes), and more while its older segments are read, so the limit
// bounds the partitions a daemon can serve: a hard limit of 20,000 left
// room for some 6,000, after which creating a topic failed with "too many
// open files". With CAP_SYS_RESOURCE (root, usually) the hard limit goes
// up to fs.nr_open, at most fileLimitCap; without it, only the soft limit
// goes up to the hard one. Failing to raise is not fatal, only a later
// EMFILE would be.
func raiseFileLimit() { fileLimit = raiseFileLimitWith(systemRlimit) }

func raiseFileLimitWith(ops rlimitOps) fileLimitChange {
	var c fileLimitChange
	if c.err = ops.get(&c.before); c.err != nil {
		return c
	}
	c.after = c.before
	target := uint64(fileLimitCap)
	if n, err := ops.nrOpen(); err == nil && n < target {
		// Above fs.nr_open setrlimit fails even for root.
		target = n
	}
	if target > c.before.Max {
		up := unix.Rlimit{Cur: target, Max: target}
		if c.hardErr = ops.set(&up); c.hardErr == nil {
			c.after = up
			return c
		}
	}
	if c.after.Cur < c.after.Max {
		up := unix.Rlimit{Cur: c.after.Max, Max: c.after.Max}
		if ops.set(&up) == nil {
			c.after = up
		}
	}
	return c
}

// logFileLimit logs at debug level what raiseFileLimit did. The soft
// limit found may already be Go's: its runtime raises it to one below
// the hard limit at start.
func logFileLimit(log *slog.Logger) {
	c := fileLimit
	if c.err != nil {
		log.Debug("file limit (RLIMIT_NOFILE) unknown", "err", c.err)
		return
	}
	attrs := []any{"soft", c.after.Cur, "hard", c.after.Max, "found_soft", c.before.Cur, "found_hard", c.before.Max}
	if c.hardErr != nil {
		attrs = append(attrs, "hard_not_raised", c.hardErr)
	}
	log.Debug("file limit (RLIMIT_NOFILE)", attrs...)
}
