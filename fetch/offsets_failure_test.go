package fetch

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// A failed write fails every change queued by then, not only those in
// it: the coordinator decided them on a state that held the failed ones.
// latest goes back to what the file holds, and each failed change's undo
// runs under the coordinator's lock, the last one first. Before, a change staged during the
// failed write stayed, and could be written with the next write though
// it was decided on a state the file never held.
func TestOffsetStoreFailedWriteFailsQueued(t *testing.T) {
	o := newOffsetStore(t.TempDir())
	var coord sync.Mutex
	o.lock = &coord
	// The first write is held until the test fails it; the others
	// succeed (without writing: the store only needs the outcome).
	entered, release := make(chan struct{}), make(chan error)
	var writes atomic.Int32
	o.writeFile = func(path string, b []byte) error {
		if writes.Add(1) == 1 {
			entered <- struct{}{}
			return <-release
		}
		return nil
	}
	entry := func(off int64) []commitEntry {
		return []commitEntry{{topic: "t", partition: 0, offset: committedOffset{Offset: off}}}
	}
	var undone []string
	stage := func(group string, off int64) *offsetsOp {
		coord.Lock()
		defer coord.Unlock()
		op := o.stage(onOffsets(commitOp(group, entry(off))))
		op.addUndo(func() { undone = append(undone, group) })
		return op
	}

	first := stage("a", 1)
	errs := make(chan error, 1)
	go func() { errs <- o.wait(first) }()
	<-entered // a's write is under way
	second := stage("b", 2)
	release <- &os.PathError{Op: "write", Path: o.path, Err: syscall.ENOSPC}
	if err := <-errs; err == nil {
		t.Fatal("a's write: no error")
	}
	// b's wait finds it failed: no write is attempted.
	if err := o.wait(second); err == nil {
		t.Error("b, staged during a's failed write: no error")
	}
	if st := o.staged(); len(st.groups) != 0 {
		t.Errorf("staged state after the failed write: %v, want what the file holds (nothing)", st.groups)
	}
	if len(undone) != 2 || undone[0] != "b" || undone[1] != "a" {
		t.Errorf("undone: %v, want b then a (the last change first)", undone)
	}

	// The next change is written alone.
	third := stage("c", 3)
	if err := o.wait(third); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("%d writes, want 2: the failed one and c's", n)
	}
	if st := o.staged(); len(st.groups) != 1 || st.groups["c"] == nil {
		t.Errorf("after the next write: %v, want c only", st.groups)
	}
}
