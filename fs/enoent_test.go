package fs

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestWalkDuringEviction: the walk to an existing data never fails with
// ENOENT while the kernel drops the dentries on the way (as memory
// pressure or drop_caches does: FORGETs racing the LOOKUPs that follow).
func TestWalkDuringEviction(t *testing.T) {
	m := mountForTest(t, Options{})
	if err := os.Mkdir(m.path("ev"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := m.path("ev", "0", "data")
	if err := os.WriteFile(data, []byte("first\n"), 0); err != nil {
		// O_TRUNC is EPERM: append instead.
		f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("first\n"))
		f.Close()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var enoent, other, ops atomic.Int64
	var firstErr atomic.Value
	note := func(err error) {
		if err == nil {
			ops.Add(1)
			return
		}
		if errors.Is(err, syscall.ENOENT) {
			enoent.Add(1)
		} else {
			other.Add(1)
		}
		firstErr.CompareAndSwap(nil, err)
	}
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if i%2 == 0 {
					f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
					if err == nil {
						_, err = f.Write([]byte("x\n"))
						f.Close()
					}
					note(err)
				} else {
					f, err := os.Open(data)
					if err == nil {
						f.Close()
					}
					note(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			root := &m.srv.root.Inode
			if tn := root.GetChild("ev"); tn != nil {
				if pn := tn.GetChild("0"); pn != nil {
					pn.NotifyEntry("data")
				}
				tn.NotifyEntry("0")
			}
			root.NotifyEntry("ev")
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("ops=%d enoent=%d other=%d first=%v", ops.Load(), enoent.Load(), other.Load(), firstErr.Load())
	if enoent.Load()+other.Load() > 0 {
		t.Errorf("%d of %d walks failed (%d ENOENT); first: %v", enoent.Load()+other.Load(), ops.Load()+enoent.Load()+other.Load(), enoent.Load(), firstErr.Load())
	}
}
