package fs

import (
	"io"
	"log/slog"
	"slices"
	"testing"
)

// TestNotifierFreshRound: a kick round covers only the nodes added since
// the last round (still watched), a change round every node.
func TestNotifierFreshRound(t *testing.T) {
	w := newNotifier(slog.New(slog.NewTextHandler(io.Discard, nil)))
	// A watch made here, so add starts no goroutine (the partition is nil).
	w.watches[nil] = &watch{nodes: make(map[*textNode]struct{}), kick: make(chan struct{}, 1)}
	a, b, c := &textNode{name: "a"}, &textNode{name: "b"}, &textNode{name: "c"}
	names := func(ns []*textNode) []string {
		var s []string
		for _, n := range ns {
			s = append(s, n.name)
		}
		slices.Sort(s)
		return s
	}
	w.add(a)
	w.add(b)
	w.add(a) // again: not fresh twice
	if got := names(w.snapshot(nil, false)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first kick round %v", got)
	}
	if got := names(w.snapshot(nil, false)); got != nil {
		t.Fatalf("second kick round %v, want none", got)
	}
	w.add(c)
	w.remove(c) // forgotten before its round
	w.add(a)    // already watched
	if got := names(w.snapshot(nil, false)); got != nil {
		t.Fatalf("kick round after a forgotten node %v, want none", got)
	}
	w.add(c)
	if got := names(w.snapshot(nil, true)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("change round %v", got)
	}
	if got := names(w.snapshot(nil, false)); got != nil {
		t.Fatalf("kick round after a change round %v, want none", got)
	}
}
