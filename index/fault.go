package index

import (
	"runtime"
	"runtime/debug"
)

// faultGuard guards a read or write of the mapping: if a page cannot be
// read back (the backing filesystem failed or was shut down under the
// daemon), the access faults, and without this the whole process dies of
// SIGBUS. A lookup then answers as an empty index does; callers scan the
// log from the segment start, and the log's own reads report the I/O
// error. Use it as
//
//	defer guardFaults().end(fallback)
//
// in the function that touches the mapping. It allocates nothing: the
// appends of the log's hot path go through it for every index entry.
type faultGuard struct{ old bool }

func guardFaults() faultGuard { return faultGuard{old: debug.SetPanicOnFault(true)} }

// end restores the fault setting and, if the function panicked with a
// memory fault, recovers and calls fallback; any other panic goes on.
func (g faultGuard) end(fallback func()) {
	debug.SetPanicOnFault(g.old)
	if r := recover(); r != nil {
		// A memory fault under SetPanicOnFault is a runtime.Error that
		// carries the faulting address.
		if _, ok := r.(interface {
			runtime.Error
			Addr() uintptr
		}); ok {
			fallback()
			return
		}
		panic(r)
	}
}
