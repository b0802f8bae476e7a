package fs

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segfs/segfs/logstore"
)

// closeOrderWait bounds how long a request waits for the RELEASE of a
// handle whose close left an unfinished line (closers). The RELEASE is
// already in the kernel's queue when close(2) returns, so it normally
// comes within microseconds; the bound only matters when the FLUSH was
// not the last close and the server could not tell (a child still holds a
// copy the opener no longer has: `{ printf a; sleep 1 & } >> data` closes
// the shell's copy with "a" pending while sleep keeps one; flush tells
// the other dups' closes apart), and then the line is not finished yet,
// so there is nothing to order.
const closeOrderWait = 200 * time.Millisecond

// closers orders the unfinished line a close(2) ends before whatever other
// requests of the partition do after that close returned.
//
// The kernel sends FLUSH for every close(2), synchronously, and RELEASE
// after the last one, asynchronously: close(2) returns once RELEASE is
// queued, not answered. go-fuse reads requests in order but serves them
// concurrently, so in `printf a >> data; echo b >> data` the second
// shell's WRITE could be served before the first one's RELEASE, which
// stores "a", and b landed first (about once in 60 pairs with two loops
// at once). FLUSH cannot store the line itself: it comes for every close of
// every dup, and a dup may still complete the line (`{ printf a; /bin/true;
// echo b; } >> data` flushes after "a" as /bin/true exits, and stores "ab").
//
// So a FLUSH that finds an unfinished line registers its handle here, and
// a WRITE from another handle, or an open or lookup of the partition's
// text, waits until that handle's RELEASE has stored the line, or it
// writes again (it was a dup's close), or closeOrderWait passes. A handle
// waited out once is not waited for again until its next FLUSH, so a dup
// left open costs one wait per close, not one per request.
type closers struct {
	log     *slog.Logger
	n       atomic.Int32 // len(m): the common case costs one load
	mu      sync.Mutex
	m       map[*dataHandle]*closer
	changed chan struct{} // closed and replaced when a handle leaves m
}

type closer struct {
	part      *logstore.Partition
	waitedOut bool
}

// flushed registers h, whose FLUSH found an unfinished line.
func (c *closers) flushed(h *dataHandle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[*dataHandle]*closer)
		c.changed = make(chan struct{})
	}
	if _, ok := c.m[h]; !ok {
		c.n.Add(1)
	}
	c.m[h] = &closer{part: h.node.part}
}

// done forgets h: its RELEASE stored the line, or it wrote again.
func (c *closers) done(h *dataHandle) {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[h]; !ok {
		return
	}
	delete(c.m, h)
	c.n.Add(-1)
	close(c.changed)
	c.changed = make(chan struct{})
}

// await waits until no handle of part other than self is registered, or
// closeOrderWait has passed; those still registered then are not waited
// for again until they flush again.
func (c *closers) await(part *logstore.Partition, self *dataHandle) {
	if c.n.Load() == 0 {
		return
	}
	var timer *time.Timer
	for {
		c.mu.Lock()
		waiting := false
		for h, cl := range c.m {
			if h != self && cl.part == part && !cl.waitedOut {
				waiting = true
				break
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if !waiting {
			break
		}
		if timer == nil {
			timer = time.NewTimer(closeOrderWait)
		}
		select {
		case <-changed:
			continue
		case <-timer.C:
		}
		c.mu.Lock()
		for h, cl := range c.m {
			if h != self && cl.part == part {
				cl.waitedOut = true
			}
		}
		c.mu.Unlock()
		if c.log != nil {
			c.log.Debug("no RELEASE after a close that left an unfinished line; a dup may still be open",
				"topic", part.Topic().Name(), "partition", part.Num(), "waited", closeOrderWait)
		}
		return
	}
	if timer != nil {
		timer.Stop()
	}
}
