package fs

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/segfs/segfs/logstore"
)

// rootNode is MOUNT/: one directory per topic.
type rootNode struct {
	gofs.Inode
	noChanges
	fs *fsys
}

var (
	_ gofs.NodeLookuper  = (*rootNode)(nil)
	_ gofs.NodeReaddirer = (*rootNode)(nil)
	_ gofs.NodeMkdirer   = (*rootNode)(nil)
	_ gofs.NodeGetattrer = (*rootNode)(nil)
	_ gofs.NodeSetattrer = (*rootNode)(nil)
	_ gofs.NodeUnlinker  = (*rootNode)(nil)
	_ gofs.NodeRmdirer   = (*rootNode)(nil)
	_ gofs.NodeRenamer   = (*rootNode)(nil)
	_ gofs.NodeCreater   = (*rootNode)(nil)
)

// Getattr reports as mtime (and ctime, atime) when the last topic was
// created (Store.TopicsModTime), as a directory's mtime moves when an
// entry is added. It was the mount time, then the data directory's mtime,
// which the checkpoint rewrites moved about once a second while appends
// went on.
func (n *rootNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fs.setDirAttr(&out.Attr, modeRoot, n.fs.store.TopicCount(), n.fs.store.TopicsModTime())
	return 0
}

func (n *rootNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return dirSetattr(n.fs, modeRoot, n.fs.store.TopicCount(), n.fs.store.TopicsModTime(), in, out)
}

func (n *rootNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fs.statfs(out)
}

// testLookupHook, when set by a test, runs at the start of every root
// lookup (to inject a panic).
var testLookupHook func(name string)

func (n *rootNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if testLookupHook != nil {
		testLookupHook(name)
	}
	if len(name) > maxNameLen {
		return nil, syscall.ENAMETOOLONG
	}
	t, err := n.fs.store.Topic(name)
	if err != nil {
		return nil, toErrno(err)
	}
	return n.topicInode(ctx, t, out), 0
}

func (n *rootNode) topicInode(ctx context.Context, t *logstore.Topic, out *fuse.EntryOut) *gofs.Inode {
	n.fs.setDirAttr(&out.Attr, modeTopic, t.PartitionCount(), topicModTime(t))
	return n.NewInode(ctx, &topicNode{fs: n.fs, topic: t},
		gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoFor(t.Name())})
}

func (n *rootNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ts := n.fs.store.Topics()
	es := make([]fuse.DirEntry, len(ts))
	for i, t := range ts {
		es[i] = fuse.DirEntry{Name: t.Name(), Mode: syscall.S_IFDIR, Ino: inoFor(t.Name())}
	}
	return listDir(rootIno, rootIno, es), 0
}

// Mkdir creates a topic with the default partition count. The rules for
// a new topic's name apply (logstore.CheckNewTopicName: Kafka's, and not
// __cluster_metadata); a name they refuse is EINVAL, and the daemon log
// says why (mkdir itself only prints "Invalid argument"). The mode is
// ignored.
func (n *rootNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if len(name) > maxNameLen {
		return nil, syscall.EINVAL
	}
	t, err := n.fs.store.CreateTopic(name, 0, nil)
	if err != nil {
		if errors.Is(err, logstore.ErrInvalidName) {
			n.fs.log.Info("mkdir refused", "name", name, "err", err)
		}
		return nil, toErrno(err)
	}
	n.fs.log.Info("topic created", "topic", name, "partitions", len(t.Partitions()))
	return n.topicInode(ctx, t, out), 0
}

// topicNode is MOUNT/TOPIC/: config and one directory per partition.
type topicNode struct {
	gofs.Inode
	noChanges
	fs    *fsys
	topic *logstore.Topic
}

var (
	_ gofs.NodeLookuper  = (*topicNode)(nil)
	_ gofs.NodeReaddirer = (*topicNode)(nil)
	_ gofs.NodeMkdirer   = (*topicNode)(nil)
	_ gofs.NodeGetattrer = (*topicNode)(nil)
)

func (n *topicNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fs.setDirAttr(&out.Attr, modeTopic, n.topic.PartitionCount(), topicModTime(n.topic))
	return 0
}

func (n *topicNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return dirSetattr(n.fs, modeTopic, n.topic.PartitionCount(), topicModTime(n.topic), in, out)
}

// topicModTime is a topic directory's mtime (and ctime, atime): the newest
// of its partitions' log directory mtimes. A topic has no directory of its
// own on disk. Its entries change when a partition is added, whose new log
// directory then is the newest; the time also moves when a partition's
// segment set changes (a roll, retention, a compaction swap), so `ls -lt
// MOUNT` puts first the topics whose logs changed last. It costs a stat
// per partition, on a LOOKUP or GETATTR of the topic, whose answer the
// kernel keeps for a second.
func topicModTime(t *logstore.Topic) time.Time {
	var newest time.Time
	for _, p := range t.Partitions() {
		if m := p.DirModTime(); m.After(newest) {
			newest = m
		}
	}
	return newest
}

func (n *topicNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if name == "config" {
		ino := inoFor(n.topic.Name(), "config")
		c := &configNode{lockable: lockable{n.fs.locks, ino}, fs: n.fs, topic: n.topic}
		c.attr(&out.Attr, nil)
		out.SetAttrTimeout(textAttrTimeout)
		return n.NewInode(ctx, c, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
	}
	num, ok := parsePartitionName(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	p, err := n.topic.Partition(num)
	if err != nil {
		return nil, toErrno(err)
	}
	return n.partInode(ctx, p, out), 0
}

func (n *topicNode) partInode(ctx context.Context, p *logstore.Partition, out *fuse.EntryOut) *gofs.Inode {
	n.fs.setDirAttr(&out.Attr, modePartDir, partSubdirs, p.DirModTime())
	num := strconv.Itoa(int(p.Num()))
	return n.NewInode(ctx, &partNode{fs: n.fs, part: p, topic: n.topic.Name(), num: num},
		gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: inoFor(n.topic.Name(), num)})
}

func (n *topicNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ps := n.topic.Partitions()
	es := make([]fuse.DirEntry, 0, len(ps)+1)
	es = append(es, fuse.DirEntry{Name: "config", Mode: syscall.S_IFREG, Ino: inoFor(n.topic.Name(), "config")})
	for _, p := range ps {
		num := strconv.Itoa(int(p.Num()))
		es = append(es, fuse.DirEntry{Name: num, Mode: syscall.S_IFDIR, Ino: inoFor(n.topic.Name(), num)})
	}
	return listDir(inoFor(n.topic.Name()), rootIno, es), 0
}

// Mkdir adds partition N, which must be the next number (EINVAL
// otherwise, EEXIST if it is there).
func (n *topicNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	num, ok := parsePartitionName(name)
	if !ok {
		return nil, syscall.EINVAL
	}
	p, err := n.topic.AddPartition(num)
	if err != nil {
		return nil, toErrno(err)
	}
	n.fs.log.Info("partition added", "topic", n.topic.Name(), "partition", num)
	return n.partInode(ctx, p, out), 0
}

// configNode is TOPIC/config: the effective config as key=value lines.
// Writing key=value lines sets overrides (key= resets one), but for a line
// that repeats what config shows for a key without one, which changes
// nothing (writtenChanges); each WRITE's
// complete lines are applied at once, and an unknown key or a bad value
// fails that write with EINVAL and changes nothing. Truncation (`>`) is
// accepted and means nothing: only the written keys change. So is a
// truncate through a writer's descriptor to where its writes ended, the
// end of an in-place rewrite (Python's `f.seek(0); f.write(new);
// f.truncate()`); another size is EPERM, as the text cannot take it.
type configNode struct {
	gofs.Inode
	lockable
	fs    *fsys
	topic *logstore.Topic
}

var (
	_ gofs.NodeOpener    = (*configNode)(nil)
	_ gofs.NodeGetattrer = (*configNode)(nil)
	_ gofs.NodeSetattrer = (*configNode)(nil)
	_ gofs.NodeFsyncer   = (*configNode)(nil)
	_ gofs.NodeFlusher   = (*configNode)(nil)
	_ gofs.NodeSetlkwer  = (*configNode)(nil)
)

// attr: the mtime (and ctime) is when the config last changed, which the
// topic keeps on disk (Topic.ConfigModTime), so that it stays put while
// the text does, across remounts too: tar compares a file's ctime before
// and after reading it, rsync skips a file whose size and mtime match,
// and `find -newer` lists what changed.
func (n *configNode) attr(a *fuse.Attr, f gofs.FileHandle) {
	text := n.topic.Config().Text()
	n.fs.setAttr(a, modeConfig, snapshotSize(f, text), n.topic.ConfigModTime())
}

// Getattr: the size is not cached (textAttrTimeout). The config also
// changes without a write through the mount (the fetch server's
// AlterConfigs), and a cached size longer than the text made `grep` on the
// file report "binary file matches" for up to a second: reads bypass the
// page cache and return the shorter text, which grep took for a hole.
func (n *configNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.attr(&out.Attr, f)
	out.SetTimeout(textAttrTimeout)
	return 0
}

func (n *configNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, errno := setattrCommon(in)
	if errno != 0 {
		return errno
	}
	if size && in.Size != 0 && int64(in.Size) != int64(len(n.topic.Config().Text())) && !wroteTo(f, in.Size) {
		return syscall.EPERM
	}
	n.attr(&out.Attr, f)
	out.SetTimeout(textAttrTimeout)
	return 0
}

func (n *configNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return 0 // SetConfig persists before it returns
}

// Flush releases the closing process's POSIX locks (locks.go), then
// applies a writer's unfinished last line (configHandle.Flush): go-fuse
// calls the node's Flush instead of the handle's.
func (n *configNode) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	n.flushLocks(ctx)
	if h, ok := f.(*configHandle); ok {
		return h.Flush(ctx)
	}
	return 0
}

func (n *configNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.noteOpen(ctx) // the lock table counts the opens of each file
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return &snapshotHandle{data: n.topic.Config().Text()}, fuse.FOPEN_DIRECT_IO, 0
	}
	return &configHandle{node: n}, fuse.FOPEN_DIRECT_IO, 0
}

// configHandle applies written config lines.
type configHandle struct {
	node *configNode
	mu   sync.Mutex
	asm  lineAssembler
	end  uint64 // where the accepted writes ended (their furthest offset)
}

// wroteTo reports whether f is a config writer whose accepted writes
// ended at size: its ftruncate(size) only cuts what it wrote past the
// text it wanted, which writing the lines already applied. A rewrite in
// place that shortens the file (a value made shorter, a line removed)
// truncates to a size the effective text need not have, and refusing it
// failed an edit whose changes were already made.
func wroteTo(f gofs.FileHandle, size uint64) bool {
	h, ok := f.(*configHandle)
	if !ok {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.end == size
}

const maxConfigLine = 64 << 10

func (h *configHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	head, lines, keep, n, err := h.asm.add(data, maxConfigLine)
	if err != nil {
		return 0, syscall.EINVAL
	}
	unfinished := keep
	if head == nil && lines == nil {
		unfinished = append(append([]byte(nil), h.asm.partial...), keep...)
	}
	if err := logstore.CheckUnfinishedConfigLine(unfinished); err != nil {
		// Refused now: a shell ignores the error close(2) would report.
		h.node.fs.log.Info("config write refused", "topic", h.node.topic.Name(), "err", err)
		if head == nil && lines == nil {
			h.asm.abort(false) // the unfinished line was this one
		}
		return 0, syscall.EINVAL
	}
	if head != nil || lines != nil {
		// Config writes are small: join the pieces for the parser.
		text := append(append([]byte(nil), head...), lines...)
		if errno := h.apply(text); errno != 0 {
			h.asm.abort(false)
			return 0, errno
		}
	}
	h.asm.commit(head, lines, keep)
	if e := uint64(off) + uint64(n); e > h.end {
		h.end = e
	}
	return uint32(n), 0
}

func (h *configHandle) apply(text []byte) syscall.Errno {
	changes, err := logstore.ParseConfigText(text)
	if err == nil && len(changes) > 0 {
		parsed := changes
		err = h.node.topic.UpdateConfig(func(cfg logstore.Config, overrides map[string]string) (map[string]string, error) {
			// Run again if the config changed meanwhile: from
			// all the lines, against the new settings.
			changes = writtenChanges(parsed, cfg, overrides)
			return changes, nil
		})
	}
	if err != nil {
		h.node.fs.log.Info("config write refused", "topic", h.node.topic.Name(), "err", err)
		return toErrno(err)
	}
	if len(changes) > 0 {
		h.node.fs.log.Info("config changed", "topic", h.node.topic.Name(), "changes", changes)
	}
	return 0
}

// writtenChanges is what lines written to config change: each line but
// those that repeat, for a key without an override, the value config
// shows for it. An editor, sponge, `cp` or a script's rewrite writes back
// every line it read; taken as overrides, the lines it left alone pinned
// every default (DescribeConfigs listed them all as set, and a pinned
// message.timestamp.after.max.ms stopped a later
// message.timestamp.difference.max.ms from applying, as Kafka's fallback
// has it). Writing back what config shows changes nothing; the Kafka
// protocol's AlterConfigs still sets an override equal to the default, as
// Kafka's does. `key=` (a reset) is kept whatever the key's state.
func writtenChanges(changes map[string]string, cfg logstore.Config, overrides map[string]string) map[string]string {
	out := make(map[string]string, len(changes))
	for k, v := range changes {
		if _, set := overrides[k]; !set && v != "" {
			if cur, ok := cfg.Get(k); ok && cur == v {
				continue
			}
		}
		out[k] = v
	}
	return out
}

// Flush applies an unfinished last line (`printf 'k=v' > config`), so that
// close(2) reports an invalid one.
func (h *configHandle) Flush(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if line := h.asm.take(); line != nil {
		return h.apply(line)
	}
	return 0
}

func (h *configHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return (&snapshotHandle{data: h.node.topic.Config().Text()}).Read(ctx, dest, off)
}
