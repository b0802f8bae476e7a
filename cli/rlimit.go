package cli

import "golang.org/x/sys/unix"

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard limit. Every open
// segment holds a descriptor for its .log (and its indexes while mapped),
// so a daemon with 1,000 partitions needs more than the usual soft 1024;
// failing to raise it is not fatal, only a later EMFILE would be.
func raiseFileLimit() {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= lim.Max {
		return
	}
	lim.Cur = lim.Max
	unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
}
