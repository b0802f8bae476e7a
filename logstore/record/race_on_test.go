//go:build race

package record

// raceEnabled: the race detector makes sync.Pool drop a quarter of what
// is put back, so pooled codec state is remade at random.
const raceEnabled = true
