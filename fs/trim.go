package fs

import (
	"sync"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// go-fuse keeps about 1 KB per node the kernel looked up until the kernel
// sends FORGET, and the kernel keeps unused dentries as long as it has
// memory: 200,000 distinct `stat offset/N` grew the daemon by 180 MB.
// childTracker bounds the nodes of offset/ and time/: past maxLiveChildren
// it invalidates the dentries of the oldest (NotifyEntry); the kernel
// drops an unused dentry at once, its inode with it, and sends FORGET.
// Names in use (an open offset/N) only lose their dentry; the next walk
// looks them up again and gets the same node.
const (
	maxLiveChildren = 4096
	trimChildrenTo  = maxLiveChildren * 3 / 4
)

type childTracker struct {
	mu       sync.Mutex
	q        []trackedChild // in order of first lookup; some may be forgotten
	set      map[*gofs.Inode]struct{}
	trimming bool
}

type trackedChild struct {
	name string
	node *gofs.Inode
}

// add records that a lookup in dir handed out ch under name, and starts a
// trim if the directory holds too many nodes. The trim runs on its own
// goroutine, holding no lock: notifications are never sent from inside a
// callback (FUSE-NOTES §2.3).
func (t *childTracker) add(dir *gofs.Inode, name string, ch *gofs.Inode) {
	t.mu.Lock()
	if _, ok := t.set[ch]; ok {
		t.mu.Unlock()
		return
	}
	if t.set == nil {
		t.set = make(map[*gofs.Inode]struct{})
	}
	t.set[ch] = struct{}{}
	t.q = append(t.q, trackedChild{name, ch})
	start := len(t.q) > maxLiveChildren && !t.trimming
	if start {
		t.trimming = true
	}
	t.mu.Unlock()
	if start {
		go t.trim(dir)
	}
}

func (t *childTracker) trim(dir *gofs.Inode) {
	t.mu.Lock()
	live := make([]trackedChild, 0, len(t.q))
	for _, c := range t.q {
		if c.node.Forgotten() {
			delete(t.set, c.node)
			continue
		}
		live = append(live, c)
	}
	var victims []trackedChild
	if len(live) > trimChildrenTo {
		victims = live[:len(live)-trimChildrenTo]
		live = live[len(live)-trimChildrenTo:]
		for _, c := range victims {
			delete(t.set, c.node)
		}
	}
	// A fresh slice: the old backing array would keep forgotten nodes.
	t.q = append(make([]trackedChild, 0, len(live)+len(live)/4), live...)
	t.mu.Unlock()
	for _, c := range victims {
		// ENOENT when the kernel dropped the dentry already: fine.
		dir.NotifyEntry(c.name)
	}
	t.mu.Lock()
	t.trimming = false
	t.mu.Unlock()
}
