package cli

import (
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRaiseFileLimit: with the right to (CAP_SYS_RESOURCE), the hard
// RLIMIT_NOFILE goes up to fs.nr_open, at most fileLimitCap, and the soft
// limit with it; without it (EPERM), as before, the soft limit goes up to
// the hard one. Only the soft limit used to be raised, so a daemon under
// a hard limit of 20,000 ran out of descriptors near 6,000 partitions even
// when run by root.
func TestRaiseFileLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		found      unix.Rlimit
		nrOpen     uint64
		nrOpenErr  error
		privileged bool
		want       unix.Rlimit
		hardErr    bool
	}{
		{"root", unix.Rlimit{Cur: 1024, Max: 20000}, 1 << 20, nil, true, unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}, false},
		{"root, low nr_open", unix.Rlimit{Cur: 1024, Max: 20000}, 50000, nil, true, unix.Rlimit{Cur: 50000, Max: 50000}, false},
		{"root, high nr_open", unix.Rlimit{Cur: 1024, Max: 20000}, 1 << 30, nil, true, unix.Rlimit{Cur: fileLimitCap, Max: fileLimitCap}, false},
		{"root, nr_open unreadable", unix.Rlimit{Cur: 1024, Max: 20000}, 0, errors.New("no /proc"), true, unix.Rlimit{Cur: fileLimitCap, Max: fileLimitCap}, false},
		{"root, hard already high", unix.Rlimit{Cur: 1024, Max: 2 << 20}, 4 << 20, nil, true, unix.Rlimit{Cur: 2 << 20, Max: 2 << 20}, false},
		{"unprivileged", unix.Rlimit{Cur: 1024, Max: 20000}, 1 << 20, nil, false, unix.Rlimit{Cur: 20000, Max: 20000}, true},
		{"unprivileged, at the hard limit", unix.Rlimit{Cur: 20000, Max: 20000}, 1 << 20, nil, false, unix.Rlimit{Cur: 20000, Max: 20000}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := tc.found
			ops := rlimitOps{
				get: func(l *unix.Rlimit) error { *l = cur; return nil },
				set: func(l *unix.Rlimit) error {
					// The kernel's rules for RLIMIT_NOFILE.
					if l.Cur > l.Max || l.Max > tc.nrOpen && tc.nrOpenErr == nil || l.Max > cur.Max && !tc.privileged {
						return syscall.EPERM
					}
					cur = *l
					return nil
				},
				nrOpen: func() (uint64, error) { return tc.nrOpen, tc.nrOpenErr },
			}
			c := raiseFileLimitWith(ops)
			if cur != tc.want || c.after != tc.want || c.before != tc.found {
				t.Errorf("limit %+v (reported %+v, found %+v), want %+v", cur, c.after, c.before, tc.want)
			}
			if (c.hardErr != nil) != tc.hardErr {
				t.Errorf("hardErr %v", c.hardErr)
			}
		})
	}
}
