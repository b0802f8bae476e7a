package record

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// checkParallel runs the checks that gen emits on every CPU. gen runs on
// the test goroutine, so a generator that draws its cases from one random
// stream draws exactly the cases it drew when it ran them itself; each
// check then runs whole on one worker with that worker's state (a
// Decoder, which, as before, decodes batch after batch). The randomized differential tests
// of this package spend their time decoding, not drawing, and ran on one
// of CI's two CPUs.
//
// A check fails as it did (Fatal, Fatalf or FailNow ends it; Error and
// the rest go to t); the first failure stops the generator, the other
// workers finish what was handed to them, and the test fails.
func checkParallel[S any](t *testing.T, gen func(emit func(check func(t testing.TB, s *S)))) {
	t.Helper()
	checks := make(chan func(testing.TB, *S), 8)
	failed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &workerTB{TB: t, failed: func() { once.Do(func() { close(failed) }) }}
			var s S
			for c := range checks {
				c(w, &s)
			}
		}()
	}
	stopped := false
	defer func() {
		if !stopped {
			close(checks)
		}
		wg.Wait()
	}()
	gen(func(c func(testing.TB, *S)) {
		select {
		case <-failed:
		default:
			select {
			case checks <- c:
				return
			case <-failed:
			}
		}
		close(checks)
		stopped = true
		wg.Wait()
		t.FailNow()
	})
}

// workerTB is the t of a check on a worker goroutine: its Fatal reports
// the failure and ends the worker (FailNow may only end the test's own
// goroutine).
type workerTB struct {
	testing.TB
	failed func()
}

func (w *workerTB) Fatal(args ...any) {
	w.TB.Helper()
	w.TB.Error(args...)
	w.FailNow()
}

func (w *workerTB) Fatalf(format string, args ...any) {
	w.TB.Helper()
	w.TB.Error(fmt.Sprintf(format, args...))
	w.FailNow()
}

func (w *workerTB) FailNow() {
	w.TB.Fail()
	w.failed()
	runtime.Goexit()
}
