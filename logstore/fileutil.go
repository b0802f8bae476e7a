package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// WriteFileAtomic replaces path with data: temp file, fsync, rename, fsync
// of the directory. Readers see the old or the new content, never a mix,
// and after it returns the new content survives a power cut.
func WriteFileAtomic(path string, data []byte) error {
	if unchanged(path, data) {
		// Unchanged (every open rewrites the topics file and the
		// checkpoints): make sure it and its name are on disk, which
		// takes no space, so that a data directory on a full disk still
		// opens for reading and for the settings that free space.
		return syncFileAndDir(path)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeFileUnsynced replaces path with data through a temp file and a
// rename, without fsyncs: readers see the old or the new content, but a
// power cut may leave either, or an empty or partial new file. Only for
// files whose loss costs time, not data, and that carry a checksum. A
// file that already holds data is left alone: the rename would only move
// its directory's mtime (every clean close rewrote the producer snapshot
// of every idle partition, so `find -newer` listed them all after a
// remount), and this write promises no more durability than the file
// already has.
func writeFileUnsynced(path string, data []byte) error {
	if unchanged(path, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// unchanged reports whether path is a regular file holding data. Only a
// regular file of the same size is read: anything else (a FIFO would
// block the read) is replaced.
func unchanged(path string, data []byte) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	old, err := os.ReadFile(path)
	return err == nil && bytes.Equal(old, data)
}

// syncFileAndDir fsyncs the file at path and its directory.
func syncFileAndDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory so that entries created, renamed or removed in
// it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// lockFile, in the data directory, holds the owner's flock and pid.
const lockFile = ".lock"

// dirLock is an exclusive flock on DATA_DIR/.lock holding the owner's pid.
type dirLock struct {
	mu      sync.Mutex // guards f against markClosing racing release
	f       *os.File
	created bool // this lockDir made the file
}

// closingMark follows the pid in the lock file once the holder has begun
// to shut down (markClosing).
const closingMark = "closing"

// lockDir takes the lock. The pid is written by claim, once Open has
// checked the directory, so that a refused Open leaves the file as it
// found it (abandon).
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	created := true
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		created = false
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		pid, closing := LockHolder(dir)
		le := &LockedError{Dir: dir, PID: pid, Closing: closing}
		if dpid, mp := LockDetached(dir); dpid == pid {
			le.Detached = mp
		}
		return nil, le
	}
	return &dirLock{f: f, created: created}, nil
}

// LockHolder returns the pid that dir's lock file names: the process
// holding the directory, or 0 when none is recorded (the file is emptied
// as its holder lets go); and whether that holder has begun to shut down
// (Store.MarkClosing). It reads the file without locking it. A holder
// killed with SIGKILL leaves its pid behind, and its lock released.
func LockHolder(dir string) (pid int, closing bool) {
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, len(f) > 1 && f[1] == closingMark
}

// claim writes the owner's pid. It is informational (for the error
// above, and for a second segfs to tell who holds the directory); the
// flock is the lock.
func (l *dirLock) claim() {
	if err := l.f.Truncate(0); err == nil {
		l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

// abandon lets the lock go without having claimed it, the file as it
// was found.
func (l *dirLock) abandon() {
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// markClosing adds closingMark after the pid. The pid and the new mark
// are written over the old content first and what is left of it is cut
// after, so a reader sees the pid throughout.
func (l *dirLock) markClosing() {
	l.mark(closingMark)
}

// detachedMark follows the pid in the lock file, and the mountpoint the
// next line, while the holder serves files still open on a mount that
// was detached lazily (umount -l): it exits only once they are closed.
const detachedMark = "detached"

// markDetached records detachedMark and the mountpoint.
func (l *dirLock) markDetached(mountpoint string) {
	l.mark(detachedMark + "\n" + mountpoint)
}

func (l *dirLock) mark(m string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		b := []byte(strconv.Itoa(os.Getpid()) + " " + m + "\n")
		if _, err := l.f.WriteAt(b, 0); err == nil {
			l.f.Truncate(int64(len(b)))
		}
	}
}

// LockDetached returns the mountpoint that dir's lock file names when its
// holder marked itself as serving files still open on a lazily detached
// mount (Store.MarkDetached), and "" otherwise.
func LockDetached(dir string) (pid int, mountpoint string) {
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if err != nil {
		return 0, ""
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(first)
	if len(f) != 2 || f[1] != detachedMark {
		return 0, ""
	}
	pid, err = strconv.Atoi(f[0])
	mountpoint = strings.TrimSuffix(rest, "\n")
	if err != nil || pid <= 0 || mountpoint == "" {
		return 0, ""
	}
	return pid, mountpoint
}

func (l *dirLock) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	l.f.Truncate(0)
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// offsetCheckpoint is Kafka's generic offset checkpoint (KAFKA-FORMAT.md
// §10.1): "0", the entry count, then "topic partition offset" lines.
type tp struct {
	topic string
	part  int32
}

func writeOffsetCheckpoint(path string, m map[tp]int64) error {
	keys := make([]tp, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].part < keys[j].part
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %d\n", k.topic, k.part, m[k])
	}
	return WriteFileAtomic(path, b.Bytes())
}

// readOffsetCheckpoint parses a checkpoint; a missing file is an empty map.
func readOffsetCheckpoint(path string) (map[tp]int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[tp]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[tp]int64{}
	if len(bytes.TrimSpace(data)) == 0 {
		return m, nil
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("%s: bad version line", path)
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: entry count %q does not match %d lines", path, lines[1], len(lines)-2)
	}
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %d: malformed %q", path, i+3, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: line %d: malformed %q", path, i+3, l)
		}
		m[tp{f[0], int32(p)}] = o
	}
	return m, nil
}

// IsDirEntryDir reports whether the entry e of dir is a directory or a
// symbolic link to one. Kafka follows such links (operators move a
// partition to another disk and link it back); a partition directory that
// is a link must not be skipped, which would hide its records. Only links
// are stat'ed, so a mountpoint inside the data directory (a hung mount,
// even) is never touched. The offline tools list partitions with it too,
// so that they see the partitions the mount sees.
func IsDirEntryDir(dir string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && fi.IsDir()
}

// parsePartitionDir splits "topic-N" at the last '-'.
func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	if ValidateTopicName(name[:i]) != nil {
		return "", 0, false
	}
	return name[:i], int32(n), true
}

// segmentName is the 20-digit, zero-padded base offset.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// ClusterMetadataTopic is the topic of KRaft's metadata log. Kafka's
// controller never creates it for a client (CreateTopics answers
// TOPIC_AUTHORIZATION_FAILED) and Kafka's log manager never loads its
// directory (__cluster_metadata-0, in every KRaft broker's data
// directory) as a topic's log: the Raft layer owns it.
const ClusterMetadataTopic = "__cluster_metadata"

// CheckNewTopicName is the rule for the name of a topic to create, the
// same by every door (mkdir, CreateTopics, auto-creation): Kafka's rules
// (ValidateTopicName), and not ClusterMetadataTopic (ErrReservedName).
func CheckNewTopicName(name string) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if name == ClusterMetadataTopic {
		return fmt.Errorf("%w: %q is the name of Kafka's KRaft metadata log, never a client's topic", ErrReservedName, name)
	}
	return nil
}

// ValidateTopicName applies Kafka's rules: [a-zA-Z0-9._-]{1,249}, not "." or "..".
func ValidateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q: only [a-zA-Z0-9._-] are allowed", ErrInvalidName, name)
		}
	}
	return nil
}

// syncProbeFile is segfs's own file in the data directory (Kafka ignores
// files at that level): see syncProbe.
const syncProbeFile = ".segfs-sync-probe"

// syncProbe catches an fsync that returned success for data the
// filesystem did not make durable. ext4 does that when its journal aborts
// (an I/O error, errors=remount-ro) while the fsync is in flight: the
// aborted commit drops the transaction holding the file's new size and
// blocks, and the fsync, finding no transaction left to wait for, returns
// 0. A plain program writing and fsyncing one file from three goroutines
// beside two other fsyncing writers loses an acknowledged line in about
// one trial in twenty; F9-ro caught it in segfs. Once the journal has
// aborted, every later metadata change fails (it needs a journal handle),
// so a size change of this probe file right after every fsync that an
// acknowledgement or the recovery point depends on tells a real success
// from that one. It costs one small metadata update per fsync.
type syncProbe struct {
	mu   sync.Mutex
	f    *os.File
	size int64
}

func openSyncProbe(dir string) (*syncProbe, error) {
	f, err := os.OpenFile(filepath.Join(dir, syncProbeFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &syncProbe{f: f}, nil
}

// check fails if the filesystem can no longer change metadata: whatever
// the fsyncs before it reported, their data may not be durable.
func (p *syncProbe) check() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.size ^= 1
	if err := p.f.Truncate(p.size); err != nil {
		return fmt.Errorf("the filesystem failed just after an fsync reported success, so what it synced may not be durable: %w", err)
	}
	return nil
}

func (p *syncProbe) close() {
	if p != nil {
		p.f.Close()
	}
}

// birthTime is path's birth time (statx STATX_BTIME), and false where the
// filesystem does not record one or path cannot be read.
func birthTime(path string) (time.Time, bool) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &stx); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec)), true
}
