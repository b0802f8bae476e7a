package logstore

// abandon simulates a crash: files are closed without flushing, sealing,
// checkpoints or the clean-shutdown marker, and the lock is dropped the way
// the kernel drops it when a process dies.
func (s *Store) abandon() {
	if s.closed.Swap(true) {
		return
	}
	close(s.stop)
	s.wg.Wait()
	s.releasePending()
	s.closeTopics(false)
	s.probe.close()
	s.lock.release()
}
