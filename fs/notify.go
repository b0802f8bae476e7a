package fs

import (
	"log/slog"
	"sync"
	"time"

	"github.com/segfs/segfs/logstore"
)

// notifyInterval is the shortest time between two notification rounds of
// one partition: appends of a busy partition coalesce into one attribute
// invalidation per interval.
const notifyInterval = 50 * time.Millisecond

// notifier tells the kernel that text files grew, whoever appended (this
// mount, the fetch server), so `tail -f` sees new lines within its poll
// interval even with 1 s attribute caching. It runs one goroutine per
// partition that has a watched node, waiting on Partition.Changed. It sends
// attribute invalidations (NotifyContent(-1, 0)), and for a data node with
// a tail page a short READ zero-filled, the invalidation of that page
// (announce, dropTail), from its own goroutines, holding no lock a request
// takes: FUSE-NOTES §2.3 lists the deadlocks that notifications sent from
// callbacks or under locks cause.
type notifier struct {
	log *slog.Logger

	mu      sync.Mutex
	watches map[*logstore.Partition]*watch
	stopped bool

	stopc chan struct{}
	wg    sync.WaitGroup
}

func newNotifier(log *slog.Logger) *notifier {
	return &notifier{
		log:     log,
		watches: make(map[*logstore.Partition]*watch),
		stopc:   make(chan struct{}),
	}
}

// watch is one partition's set of watched nodes.
type watch struct {
	nodes map[*textNode]struct{}
	// fresh are the nodes added since the last round, and kick wakes the
	// goroutine for them: a node just added may have attributes from
	// before a change the last round announced. Only they need that
	// round: every `head -n1 offset/N` adds a node, and notifying all the
	// watched ones (up to thousands) for each cost a fifth of the
	// daemon's CPU in a lookup loop.
	fresh []*textNode
	kick  chan struct{}
	// data are the watched nodes of data (every generation and
	// incarnation): few, where offset/N nodes can be thousands.
	data map[*textNode]struct{}
}

// add watches n. The partition's goroutine starts with its first node and
// lives until stop: partitions are few.
func (w *notifier) add(n *textNode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	wt, ok := w.watches[n.part]
	if !ok {
		wt = &watch{nodes: make(map[*textNode]struct{}), kick: make(chan struct{}, 1), data: make(map[*textNode]struct{})}
		w.watches[n.part] = wt
		w.wg.Add(1)
		go w.run(n.part, wt.kick)
	}
	if _, ok := wt.nodes[n]; !ok {
		wt.nodes[n] = struct{}{}
		wt.fresh = append(wt.fresh, n)
		if n.isData {
			wt.data[n] = struct{}{}
		}
	}
	select {
	case wt.kick <- struct{}{}:
	default:
	}
}

func (w *notifier) remove(n *textNode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.watches[n.part]; wt != nil {
		delete(wt.nodes, n)
		delete(wt.data, n)
	}
}

// invalidateOthers invalidates the attributes of every other data node of
// n's partition that gave the kernel attributes since it was last
// invalidated, after an append through n. The kernel updates the size of
// the inode a WRITE went through itself, but a reader's descriptor can be
// another inode of the same file (an older generation, or the node cached
// readers keep when a writer gets a new one), whose 1 ns attributes the
// kernel keeps until its next clock tick, and the rounds above come up to
// notifyInterval later: `echo x >> data; cat <&3` printed nothing about a
// third of the time. Sent from the WRITE, before its reply, holding no
// lock a request takes: an attribute invalidation does no page work, so
// it waits for no request (FUSE-NOTES §2.3 measured it from inside Write
// without a hang). A node whose tail page a short READ zero-filled has
// that page dropped too (announce, dropTail), so that the reader's next
// read(2) keeps the size its GETATTR gives: that waits only for the READs
// filling the page, which nothing the WRITE holds holds up (the page
// invalidations FUSE-NOTES saw hang were of the inode whose READ or
// buffered WRITE held the page lock; a WRITE of data is direct I/O). A
// WRITE costs a map walk over the few data nodes, and an invalidation
// only after a reply gave attributes or a READ ended short: a `tail -f`
// polling once a second costs one a second.
func (w *notifier) invalidateOthers(n *textNode) {
	// A GETATTR that was in flight during the append may lose its
	// attributes to this: its read(2) was not after the write.
	var buf [4]*textNode
	ns := buf[:0]
	w.mu.Lock()
	if wt := w.watches[n.part]; wt != nil {
		for d := range wt.data {
			if d != n && (d.attrsOut.Load() || d.zeroFill.Load() != 0) {
				ns = append(ns, d)
			}
		}
	}
	w.mu.Unlock()
	for _, d := range ns {
		// A reader's tail page zero-filled by a short READ goes now,
		// before the write(2) returns, not from the GETATTR of the
		// reader's next read(2), which would then lose the size
		// (dropTail).
		d.announce(true)
	}
}

// snapshot returns the nodes of p's round: all of them, or (!all) those
// added since the last round that are still watched.
func (w *notifier) snapshot(p *logstore.Partition, all bool) []*textNode {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.watches[p]
	if wt == nil {
		return nil
	}
	fresh := wt.fresh
	wt.fresh = nil
	if !all {
		ns := fresh[:0]
		for _, n := range fresh {
			if _, ok := wt.nodes[n]; ok {
				ns = append(ns, n)
			}
		}
		return ns
	}
	ns := make([]*textNode, 0, len(wt.nodes))
	for n := range wt.nodes {
		ns = append(ns, n)
	}
	return ns
}

func (w *notifier) run(p *logstore.Partition, kick <-chan struct{}) {
	defer w.wg.Done()
	changed := p.Changed()
	if changed == nil {
		return
	}
	for {
		all := false
		select {
		case <-changed:
			all = true
		case <-kick:
			// A change may have landed too: then every node hears.
			select {
			case <-changed:
				all = true
			default:
			}
		case <-w.stopc:
			return
		}
		if all {
			// Take the next channel before notifying, so a change
			// that lands while we notify wakes the next round.
			changed = p.Changed()
		}
		gen := p.Generation()
		for _, n := range w.snapshot(p, all) {
			if n.isData {
				// Not if the kernel was last told (or is being told),
				// or sent an invalidation at, the size the view has
				// now: an invalidation would only make it discard the
				// attributes of a GETATTR in flight, and the read(2)
				// behind that GETATTR would see the old size (`echo x
				// >> data; cat <&3` printed nothing when this round
				// came between its two GETATTRs). The page a short
				// READ left zero-filled goes first, with the
				// attributes: the GETATTR of a reader's next read(2)
				// has nothing to drop, and the kernel keeps the size
				// it gives (announce).
				n.announce(false)
			} else if errno := n.NotifyContent(-1, 0); errno != 0 {
				// ENOENT for a node the kernel forgot: fine.
				w.log.Debug("notify", "file", n.name, "errno", errno)
			}
			if n.isData && n.gen != gen {
				// A writer holding the node may send nothing that
				// would release its view (unpin).
				n.unpin()
			}
			if n.gen != gen && n.staleNotified.CompareAndSwap(false, true) {
				// A new generation: make the next open of this name
				// look it up again and reach the new node.
				n.parent.NotifyEntry(n.name)
			}
		}
		select {
		case <-time.After(notifyInterval):
		case <-w.stopc:
			return
		}
	}
}

// stop ends every goroutine. A notification stuck in the kernel would
// block its goroutine; stop waits at most timeout for them.
func (w *notifier) stop(timeout time.Duration) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	close(w.stopc)
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		w.log.Warn("notifier goroutines did not stop in time")
	}
}
