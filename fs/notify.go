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
// only attribute invalidations (NotifyContent(-1, 0)), from its own
// goroutines, holding no lock: FUSE-NOTES §2.3 lists the deadlocks that
// notifications sent from callbacks or under locks cause.
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
// lock: an attribute invalidation does no page work, so it waits for no
// request (FUSE-NOTES §2.3 measured it from inside Write without a hang;
// page invalidations there hang). A WRITE costs a map walk over the few
// data nodes, and an invalidation only after a reply gave attributes: a
// `tail -f` polling once a second costs one a second.
func (w *notifier) invalidateOthers(n *textNode) {
	// A GETATTR that was in flight during the append may lose its
	// attributes to this: its read(2) was not after the write.
	var buf [4]*textNode
	ns := buf[:0]
	w.mu.Lock()
	if wt := w.watches[n.part]; wt != nil {
		for d := range wt.data {
			if d != n && d.attrsOut.Load() {
				ns = append(ns, d)
			}
		}
	}
	w.mu.Unlock()
	for _, d := range ns {
		if d.attrsOut.CompareAndSwap(true, false) {
			// ENOENT for a node the kernel forgot: fine.
			d.NotifyContent(-1, 0)
		}
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
			// ENOENT for a node the kernel forgot: fine.
			if n.isData && n.toldCurrent() {
				// The kernel was last told (or is being told) the
				// size the view has now. An invalidation would only
				// make it discard the attributes of a GETATTR in
				// flight, and the read(2) behind that GETATTR would
				// see the old size: `echo x >> data; cat <&3` printed
				// nothing when this round came between its two
				// GETATTRs.
			} else if errno := n.NotifyContent(-1, 0); errno != 0 {
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
