package index

import (
	"runtime"
	"runtime/debug"
)

// catchFault guards a read of the mapping: if a page cannot be read back
// (the backing filesystem failed or was shut down under the daemon), the
// access faults, and without this the whole process dies of SIGBUS. The
// lookup then answers as an empty index does; callers scan the log from the
// segment start, and the log's own reads report the I/O error. Use it as
// `defer catchFault(fallback)()` in the function that touches the mapping.
func catchFault(fallback func()) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			// A memory fault under SetPanicOnFault is a runtime.Error
			// that carries the faulting address.
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
}
