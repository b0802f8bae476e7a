package fs

import (
	"sync"
	"time"

	"github.com/segfs/segfs/logstore"
)

// A lookup of offset/N opens a text view to learn the size and generation
// (the expensive part is finding N's text position in its batch), and the
// OPEN that usually follows at once (`head -n1 offset/N` is LOOKUP, OPEN,
// READ, RELEASE) would open the same view again. lookupViews keeps the
// views lookups opened for that open. Each view holds 2 MiB of pooled
// buffers and pins its segments (deleted ones included), so only a few are
// kept, each for at most lookupViewTTL; a kept view is never visible to
// usable or a handle until an open takes it, and an open takes it only
// if it is still of the partition's current generation, which is what a
// fresh open would get.
const (
	lookupViewMax = 4
	lookupViewTTL = 100 * time.Millisecond
)

type lookupViews struct {
	mu    sync.Mutex
	ents  []lookupView  // oldest first
	armed bool          // an expiry timer is pending
	ttl   time.Duration // lookupViewTTL when 0; tests lengthen it (under mu)
}

func (l *lookupViews) ttlLocked() time.Duration {
	if l.ttl > 0 {
		return l.ttl
	}
	return lookupViewTTL
}

type lookupView struct {
	n  *textNode
	v  *logstore.TextView
	at time.Time
}

// put keeps v for n's next open, replacing a view kept for n before.
func (l *lookupViews) put(n *textNode, v *logstore.TextView) {
	var drop []*logstore.TextView
	l.mu.Lock()
	for i, e := range l.ents {
		if e.n == n {
			drop = append(drop, e.v)
			l.ents = append(l.ents[:i], l.ents[i+1:]...)
			break
		}
	}
	l.ents = append(l.ents, lookupView{n: n, v: v, at: time.Now()})
	if len(l.ents) > lookupViewMax {
		drop = append(drop, l.ents[0].v)
		l.ents = append(l.ents[:0], l.ents[1:]...)
	}
	if !l.armed {
		l.armed = true
		time.AfterFunc(l.ttlLocked(), l.expire)
	}
	l.mu.Unlock()
	closeViews(drop)
}

// take returns the view kept for n, or nil; the caller owns it.
func (l *lookupViews) take(n *textNode) *logstore.TextView {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.ents {
		if e.n == n {
			l.ents = append(l.ents[:i], l.ents[i+1:]...)
			return e.v
		}
	}
	return nil
}

// size is the size of the view kept for n, left kept, if it is of the
// partition's current generation, as an open would take it (openView).
// A kept view is closed only once it is out of ents, so it is open here.
func (l *lookupViews) size(n *textNode) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.ents {
		if e.n == n {
			if e.v.Generation() != n.part.Generation() {
				return 0, false
			}
			return e.v.Size(), true
		}
	}
	return 0, false
}

// expire closes the views kept longer than lookupViewTTL. It runs on a
// timer goroutine, never inside a FUSE callback.
func (l *lookupViews) expire() {
	var drop []*logstore.TextView
	l.mu.Lock()
	now := time.Now()
	i := 0
	for i < len(l.ents) && now.Sub(l.ents[i].at) >= l.ttlLocked() {
		drop = append(drop, l.ents[i].v)
		i++
	}
	l.ents = append(l.ents[:0], l.ents[i:]...)
	l.armed = len(l.ents) > 0
	if l.armed {
		time.AfterFunc(l.ttlLocked()-now.Sub(l.ents[0].at), l.expire)
	}
	l.mu.Unlock()
	closeViews(drop)
}

// closeAll closes every kept view (unmount).
func (l *lookupViews) closeAll() {
	l.mu.Lock()
	drop := make([]*logstore.TextView, 0, len(l.ents))
	for _, e := range l.ents {
		drop = append(drop, e.v)
	}
	l.ents = nil
	l.mu.Unlock()
	closeViews(drop)
}

func closeViews(vs []*logstore.TextView) {
	for _, v := range vs {
		v.Close()
	}
}
