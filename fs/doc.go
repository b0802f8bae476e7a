// Package fs is segfs's FUSE view (github.com/hanwen/go-fuse/v2, imported
// as gofs): it maps the files of DESIGN.md §3 onto logstore calls and holds
// no storage logic of its own.
//
// # Layout
//
//	MOUNT/                 rootNode     Store.Topics, mkdir → CreateTopic
//	  TOPIC/               topicNode    mkdir N → AddPartition
//	    config             configNode   Config.Text / ParseConfigText+SetConfig
//	    N/                 partNode
//	      data             textNode     Partition.Text(log start) / AppendLines
//	      offset/N         textNode     Partition.Text(N)
//	      time/T           timeLink     OffsetForTime → "../offset/N"
//	      segments/NAME    segFile      OpenSegmentFile, served with ReadResultFd
//	      status           statusNode   Partition.Status
//
// Inode numbers are derived from the path (inoFor), so a file keeps its
// st_ino across kernel forgets and remounts; `tail -F` compares them.
//
// # Generations
//
// A text file (data, offset/N) is one kernel inode per partition
// generation: StableAttr{Ino: inoFor(path), Gen: generation+1}. Appends
// only extend a view, so content at a position never changes and the page
// cache stays valid. When retention or compaction changes the retained
// prefix, Lookup hands out a node of the new generation (a new nodeid with
// the same st_ino) and the notifier invalidates the old dentry, while open
// handles keep reading their TextView, whose segments logstore keeps open
// (deleted or rewritten files included) until it closes. A node whose
// generation is gone and which serves a view (an open `tail -f`) answers
// ESTALE to a read Open or a handle-less Getattr; the VFS then retries the
// path walk with revalidation and reaches the new node, so a new open sees
// the retained log. Writable opens append whatever the generation and
// never answer ESTALE. The VFS retries ESTALE only once, and millisecond
// retention can move the generation again between its lookup and its
// open: the node that lookup handed out serves that one request anyway
// (estale, retried).
//
// # Writing data
//
// Writable opens must use O_APPEND (like chattr +a; anything else is EPERM,
// as is any truncation) and get FOPEN_DIRECT_IO, so a write(2) up to
// max_write arrives as one WRITE. Every WRITE's complete lines go to one
// AppendLines call whatever its offset; the unfinished tail waits in the
// handle (lineAssembler) and becomes a record at RELEASE, that is shortly
// after the last close of the open file description, not at FLUSH, which
// comes once per close of every dup and may come before the first write
// (and which segfs answers ENOSYS, so the kernel stops sending it: it has
// nothing to do, and each one cost close(2) a round trip).
// The reply is sent after AppendLines returned: a write(2) that returned
// is in the segment file. A line longer than max.message.bytes fails with
// EMSGSIZE and nothing of it is stored.
//
// # Caching
//
// Read-only opens of data and offset/N use FOPEN_DIRECT_IO: every read
// is served by the daemon from its view. The page cache was tried
// (FOPEN_KEEP_CACHE, bytes at a position never change within a view) and
// served NUL bytes to `tail -f`: the kernel zero-fills the rest of a page
// read at the end of the file, and when the file then grows by a path the
// kernel does not see (the fetch server, another writer's direct I/O), a
// read racing the attribute refresh returned those zeros. Sizes are always
// the true TextView size, so tail, wc -c and stat stay truthful. Appends from any path (the fetch server,
// other writers) are announced by the notifier: one goroutine per watched
// partition waits on Partition.Changed and sends attribute-only
// NotifyContent(-1, 0), coalesced to at most one round per 50 ms, holding
// no lock and never from inside a callback (FUSE-NOTES §2.3). Entry and
// attribute timeouts are 1 s, except data and offset/N, whose attributes
// are not cached (1 ns): direct reads are not limited by the kernel's
// size, so a cached size could lag what a read returned, and growth by
// other paths reaches the kernel only by notification. Negative entries are not cached, because
// offset/N and time/T become valid later. time/T symlinks are cached by the
// kernel: a link node's target never changes (its Gen is the target), and a
// link to the log end (no record at or after T yet) has a 1 ns entry
// timeout so the next walk looks it up again.
//
// Every looked-up offset/N and time/T is a go-fuse node (about 1 KB)
// until the kernel forgets it. Past maxLiveChildren nodes in one such
// directory, a goroutine outside any callback invalidates the oldest
// dentries (NotifyEntry) and the kernel sends FORGET (childTracker). A
// lookup of offset/N leaves the view it opened for the open that follows
// (lookupViews: at most a few, for at most 100 ms).
//
// # Interrupts
//
// WRITE does not honour INTERRUPT: an append takes microseconds, and an
// EINTR after the lines were committed would make a writer repeat them.
//
// # Concurrency
//
// Callbacks hold only their node's or handle's mutex, never across a
// kernel notification. Lock order: fsys.gate (read side, taken by writes)
// → handle mu → node mu → logstore's own locks.
package fs
