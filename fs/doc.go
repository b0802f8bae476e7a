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
// Every directory lists "." and ".." first (listDir); offset/ and time/
// list nothing else, so that find, grep -r and backups do not read the log
// once per name, while every valid name resolves on lookup.
//
// A directory's times move when its entries change. For TOPIC/N and its
// offset/, time/ and segments/ they are those of the partition's log
// directory on disk; for TOPIC/, which has no directory of its own, the
// newest of its partitions' (topicModTime). The root's is when the last
// topic was created (Store.TopicsModTime: the birth time of the newest
// topic's partition 0 directory), not the data directory's mtime, which
// the checkpoint rewrites (temp file and rename) move about once a second
// while appends go on. A GETATTR of a directory costs one stat (one per
// partition for a topic; the root's birth times are read once per topic).
// A file's times are when its content last changed, across remounts too:
// data's and offset/N's the last append (the active segment's mtime, then
// each change of size), status's the last append too, then each change of
// its text (changeTime), config's the topic's last config change, which
// logstore keeps on disk (Topic.ConfigModTime).
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
// (deleted or rewritten files included) until it closes. A data node
// keeps a view of its own beyond its handles only while the kernel may
// serve pages of it ("Caching"): once it gave out a cached handle, and
// until its generation is gone (every open by name then reaches a newer
// node). Otherwise it closes its view when no handle uses it (unpinLocked,
// also when the notifier finds it stale): a writer holding data (`app >>
// data` for days) keeps its node, and FORGET never comes, so its view
// pinned every segment deleted meanwhile. Its next size or open opens a
// view of the current generation, and its first cached open after that
// drops the node's pages first (a private mmap through an uncached handle
// fills them too). A node whose
// generation is gone and which serves a view (an open `tail -f`) answers
// ESTALE to a read Open or a handle-less Getattr; the VFS then retries the
// path walk with revalidation and reaches the new node, so a new open sees
// the retained log. Writable opens append whatever the generation and
// never answer ESTALE for it, but the GETATTR of the kernel's permission
// check that comes before a writer's OPEN can (see "Caching" for what
// its retry is handed). The VFS retries ESTALE only once, and millisecond
// retention can move the generation again between its lookup and its
// open: the caller's next GETATTR and OPEN of the file (its retried walk)
// are served anyway, by whichever node they reach (estale, keyed by
// caller).
//
// A change of key.separator is a new generation too (logstore bumps it):
// the text of every record changes shape. An open data file keeps the
// separator it was opened with, for the records appended later as well,
// since a byte's position in it never changes (DESIGN.md "Stable
// positions"): a `tail -f` (or `tail -F`, which sees the same st_ino)
// started before the change goes on printing KEY<old>VALUE, while a new
// open renders every record with the new separator. To follow in the new
// rendering, restart the reader. Writers split each line with the
// separator in force when it is appended (TestMountKeySeparatorOpenReader).
//
// # Writing data
//
// Writable opens must use O_APPEND (like chattr +a; anything else is EPERM,
// as is any truncation) and get FOPEN_DIRECT_IO, so a write(2) up to
// max_write arrives as one WRITE. Every WRITE's complete lines go to one
// AppendLinesAfter call whatever its offset (the line it completes and the
// rest, as two pieces of one batch); the unfinished tail waits in the
// handle (lineAssembler) and becomes a record at RELEASE, that is shortly
// after the last close of the open file description, not at FLUSH, which
// comes once per close of every dup and may come before the first write.
// The kernel sends RELEASE after close(2) returned, and go-fuse serves
// requests concurrently, so a FLUSH that finds an unfinished line makes
// the partition's other writes, opens and lookups wait (closers.go) until
// RELEASE has stored it: `printf a >> data; echo b >> data` stores a, then
// b. A FLUSH makes no one wait while the opener still holds the file: one
// from another process than the opener, while the opener has not closed
// its own descriptor (a program the writer spawns, closing its inherited
// copy at exec, or exiting), or any FLUSH while the opener's process, or
// the closing one, still has a descriptor of this open file, which the
// server reads from /proc/PID/fdinfo (a shell's builtin redirected to a
// held descriptor, `exec 3>>data; printf a >&3`, closes a dup as it moves
// fd 1 back). fdinfo tells opens apart by their positions only, so while
// another open of data may stand at the same position (its appends ended
// there, or it has not written yet, or it is O_RDWR: lseek and read move
// those unseen) a close counts as possibly the last. If a FLUSH that was not the last close makes them
// wait all the same (a child holds a copy the shell no longer has:
// `{ printf a; sleep 1 & } >> data`), they wait at most closeOrderWait,
// once per such FLUSH. FLUSH stores nothing for data, but it fails close(2) for an unfinished line RELEASE could not
// store (EINVAL for a keyless line on a compacted topic, EMSGSIZE for one
// longer than a max.message.bytes lowered since), leaving it pending, as another dup may still complete
// it. It is answered, not ENOSYS: ENOSYS would stop FLUSH for every file
// of the mount, and config reports an invalid unfinished line from it. A shell ignores close(2)'s error, so
// config also refuses an unfinished line at its write(2) as soon as it
// cannot become valid: a key no key starts with (`printf bogus`), an
// unknown key once its '=' has come, or a value the key can never take
// (logstore.CheckUnfinishedConfigLine).
// The reply is sent after the append returned: a write(2) that returned
// is in the segment file, and the unfinished line it leaves is in the
// partition's journal of unfinished lines (logstore.LineWriter; logstore
// doc, "Unfinished lines"), so that a kill -9 of the daemon is that
// handle's close: the next mount makes the line a record. Each change of
// the line is journaled before the reply (a WRITE with no newline:
// Extend; one that stores lines: the entry goes with the batch, under
// the append lock), and each end of it (a record at RELEASE, at an
// O_SYNC close, at unmount, or a refusal that drops it) clears it; a
// writer that never leaves a line unfinished writes nothing there. A line
// RELEASE could not store for want of space stays in the journal for the
// next mount; one refused for what it is is cleared (if the disk is too
// full for that entry, the journal forgets the line in memory and
// repairs its file at the handle's next WRITE, its RELEASE, or the clean
// unmount at the latest: LineWriter.Drop, Resync). A WRITE from a file opened O_SYNC or O_DSYNC, or a
// pwritev2 with RWF_DSYNC, is answered after the FSYNC fsync(2) would send
// (syncwrite.go): for direct I/O the kernel leaves that sync to the server;
// that sync covers the writer's own line only, as O_DSYNC covers the
// bytes written (another writer's line failing its sync must not fail a
// write whose lines are stored).
// An fsync(2) of data through any descriptor (a reader's too, or `sync
// FILE`) makes every writer's unfinished line of the partition durable in
// the journal, as a local file's fsync covers every byte written to it;
// the line stays unfinished (it is not a record yet) and a power cut does
// not lose it (LineWriter.Sync; textNode.Fsync). The unfinished line of a
// file opened O_SYNC or O_DSYNC, or of one fsynced through its own
// descriptor while the line was unfinished, is stored and synced at FLUSH instead of RELEASE, so that it is on disk
// when close(2) returns; for these files a close by the process that
// opened them ends the line, even a dup's (another process's close, as a
// spawned program's close-on-exec, does not, and RELEASE syncs the line). A line too long for a batch of its own
// (Config.MaxLineBytes: the smaller of max.message.bytes and segment.bytes,
// less the batch header and the most framing a record has) fails the
// write(2) that brings it with EMSGSIZE, also while it is unfinished, and
// nothing of it is stored: an unfinished line stored at RELEASE can no
// longer be refused, since no error reaches the writer there. A refused
// WRITE (EMSGSIZE, or EINVAL for a keyless line on a compacted topic)
// stores nothing; the unfinished line from before it goes only if the
// refused line is the one it starts. A WRITE whose append fails (ENOSPC)
// stores nothing, and the unfinished line from before it stays pending, so
// a writer that resends the chunk completes the same line. A WRITE longer
// than max.message.bytes is several batches; if one after the first fails,
// the reply is a short write of exactly the bytes stored, and the writer
// resends the rest.
//
// # Caching
//
// Read-only opens of data use the page cache (FOPEN_KEEP_CACHE: within a
// node's view the bytes at a position never change), so a re-read is
// served by the kernel. The hazard is the page read at the end of the
// text: the kernel zero-fills its rest and keeps it, and a reader that
// sees a larger i_size before that page is dropped reads the zeros as
// data (the fault suite's F15 caught `tail -f` printing NULs when reads
// were first cached). Two rules close it. (1) Before a data node reports
// a larger size (LOOKUP, GETATTR, SETATTR: report), it drops the pages
// from the size it last reported on (NotifyContent(off, 0), from those
// handlers, which the kernel never sends holding a page lock), so every
// page the kernel may read below the new size was filled after the text
// reached it; the kernel's own invalidation on a size change comes just
// after it sets i_size, too late for a racing reader. It drops them only
// when a cached READ since the last drop ended short below the new size
// (zeroFill) or is being served: the kernel discards the attributes of a
// request during which the inode was invalidated, so the read(2) whose
// GETATTR drops pages still sees the old size and returns end-of-file;
// dropping at every growth starved a reader that follows with read(2)
// alone for as long as appends kept coming. Nor does it wait for a
// GETATTR: when an append is announced (the notifier's round, and
// before the reply of a WRITE through the mount: below), a page a cached
// READ left zero-filled below the view's new size is dropped then, from
// no request of that inode, under the same lock as report's drop
// (dropTail), so the GETATTR of the reader's next read(2) has nothing to
// drop and the kernel keeps its size: dropped from that GETATTR, a
// reader following with read(2) alone got each line one read late
// (end-of-file first), an event-driven one each line one event late. The
// GETATTR's drop stays for a short READ served after the announcement.
// (2) The kernel also
// grows i_size by every byte a WRITE accepted, and a WRITE's bytes can run
// ahead of the text (an unfinished line, a key cut by key.separator), so
// no cached reader shares an inode with a writer: reads opened while a
// writer is open bypass the cache (FOPEN_DIRECT_IO), and a writable open
// of a node with cached readers answers ESTALE; the VFS looks the name up
// again, and Lookup hands out a new node of a new incarnation (same
// st_ino, StableAttr.Gen differs) that gives no cached handle until the
// writer's open has come (startWriter, admit). A writer's walk can also
// spend the VFS's one retry earlier, on the GETATTR the kernel's
// permission check sends without a handle, which a node whose generation
// is gone answers ESTALE; the node of the new generation that its retry
// is handed may have cached readers by then. So every lookup of a walk
// retrying an ESTALE that came before its OPEN (that GETATTR, or a
// writable open), recognised by the caller's pid, hands out a node
// without cached readers (one with them retires), and that node gives
// other callers no cached handle until this caller has opened it, or for
// at most a second if it never does (mayWrite, holds). One window stays
// open, in the kernel, and rules (1) and (2) cannot close it (traced with
// bpftrace on this kernel, 6.18): fuse_change_attributes truncates the
// page cache to the size a reply carries on every size change, growth
// included, after it has set i_size and outside the inode lock. That
// truncate zeroes the tail page past that size in place, and it waits
// for the page's lock, which a READ of that page holds while the server
// answers it. So a GETATTR applied with size S while the tail page's READ
// is in flight sleeps; a second GETATTR grows i_size to S' > S; the READ
// fills the page with text beyond S and unlocks it; the first truncate
// then zeroes S onwards; and until a reader's drop removes the page,
// readers copy NULs from S to S' (several readers at the same byte, and
// a re-read is text). The rule that discards a reply during which the
// inode changed is checked before i_size is written, and a READ does not
// change the inode's version. Capping READs at the reported size leaves
// the late truncate as it was (measured: worse), and notifies cannot be
// sent from the READ handler (FUSE-NOTES §2.3); only uncached reads
// close it (FOPEN_DIRECT_IO for every data open), at the cost of every
// re-read. It needs growth while no writer holds data open (a writer's
// presence makes reads direct, below), a reader at the tail and a
// preempted or sleeping truncate. TestDataPageCacheEOFRace read such a
// NUL once in about 100 to 250 runs on a loaded machine (6 readers in two
// loops: 5 in 84), and allows one per run in the shape it met in CI (a
// read at the previous end of file that is zeros from its first byte and
// text when read again).
// A cached READ that meets a
// damaged batch fails whole (a short READ would read as the end of the
// file): the kernel retries page by page, and the reader gets EIO at the
// start of the page holding the damage. So a fenced partition (a write
// or fsync failed: its log may end in a batch whose pages the filesystem
// lost) opens data uncached, and a reader gets every line before the
// damage, then EIO. offset/N opens bypass the cache:
// they are read a line at a time by lookups. A file opened with direct
// I/O (offset/N, status, config, data opened for writing, and data opened
// read-only while a writer has it open) maps private but not shared: mmap
// answers ENODEV, as the kernel maps such a file shared only with
// FUSE_DIRECT_IO_ALLOW_MMAP, which would let a writable shared mapping of
// data write its pages back as appends (mount.go). Sizes are always the true
// TextView size, so tail, wc -c and stat stay truthful. Appends from any
// path (the fetch server, other writers) are announced by the notifier:
// one goroutine per watched partition waits on Partition.Changed and
// sends attribute-only NotifyContent(-1, 0), coalesced to at most one
// round per 50 ms, holding no lock a request takes and never from inside
// a callback (FUSE-NOTES §2.3); for a data node with a page to drop (rule (1)
// above) that invalidation drops it, else the GETATTR that follows does.
// A round skips a data node whose last reported size, or whose last
// announced one, is its view's size now: an invalidation then only made
// the kernel discard the attributes of a GETATTR in flight, and the
// read(2) behind it saw the old size. An append through the mount does
// not wait for a round: before its WRITE is answered, the attributes of
// the file's other kernel inodes (older generations, the node cached
// readers keep) are invalidated, where a reply gave some since, and their
// zero-filled tail pages dropped (invalidateOthers, announce), so that a
// read after the write(2) returned sees its lines at its first read(2).
// Attribute-only, FUSE-NOTES measured this safe from inside Write; the
// page drop waits only for the READs filling those pages, which the
// WRITE, direct I/O on another inode and holding no lock, does not hold
// up. The round and the WRITE announce a node one after the other
// (announceMu), so that the round's invalidation cannot come after the
// write(2) returned and discard the size of the reader's GETATTR. Entry and
// attribute timeouts are 1 s, except data and offset/N, whose attributes
// are not cached (1 ns, which the kernel keeps for the rest of its clock
// tick): direct reads are not limited by the kernel's size, so a cached
// size could lag what a read returned, a cached read refreshes the size
// first and so reads what an append just acknowledged, and growth by other
// paths reaches the kernel only by notification. status and config are not
// cached either (their texts change length with appends and config
// changes, and tar reads st_size bytes), and an open one's fstat reports
// the length of the text its reads return (snapshotSize). Negative entries are not cached, because
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
// (lookupViews: at most a few, for at most 100 ms); a GETATTR before that
// open is answered from the kept view and leaves it there.
//
// # Locks
//
// flock and fcntl locks are kept by the daemon, one table per st_ino, so
// that every generation and incarnation of data (each a kernel inode of
// its own, with the same st_ino) shares them: the kernel keeps locks per
// kernel inode, and a lock stopped excluding anyone once a writer had
// appended behind its holder (locks.go). A lock request in the way of a
// flock or OFD lock whose description had a descriptor closed waits a
// little for its RELEASE, which comes after close(2) returned, unless
// /proc shows the description still open (lockopens.go).
//
// # Interrupts
//
// WRITE does not honour INTERRUPT: an append takes microseconds, and an
// EINTR after the lines were committed would make a writer repeat them.
// A waiting SETLKW does: it ends with EINTR (locks.go).
//
// # Concurrency
//
// Callbacks hold only their node's or handle's mutex, never across a
// kernel notification. Lock order: fsys.gate (read side, taken by writes)
// → handle mu → node mu → logstore's own locks.
package fs
