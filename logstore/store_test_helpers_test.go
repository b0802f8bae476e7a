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

// compactStopping runs one compaction pass with the cleaner's test hook
// calling stop at each step (a non-nil error there is a crash), and
// counts the steps it reached.
func compactStopping(p *Partition, stop func(step string) error) (steps int, err error) {
	cleanerCrash = func(step string) error {
		steps++
		return stop(step)
	}
	defer func() { cleanerCrash = nil }()
	_, err = p.Compact()
	return steps, err
}
