package tests

import (
	"strings"
	"testing"
)

// TestMountRootAndConfig: `ls` of the root lists the topics; topic names
// follow Kafka's rules (249 characters is the longest); `config` reads as
// every setting of DESIGN.md §3 with Kafka's defaults, `key=value` sets an
// override and `key=` resets it to the default.
func TestMountRootAndConfig(t *testing.T) {
	m := mntNew(t)
	long := strings.Repeat("n", 249)
	m.ok(`mkdir "$M/orders" "$M/a.b_c-1" "$M/` + long + `"`)
	if got := m.ok(`ls "$M"`); got != "a.b_c-1\n"+long+"\norders\n" {
		t.Fatalf("ls of the root = %q", got)
	}
	m.fails(`mkdir "$M/`+long+`n"`, "Invalid argument")
	m.fails(`mkdir "$M/a:b"`, "Invalid argument")

	cfg := `"$M/orders/config"`
	keys := mntLines(m.ok(`cut -d= -f1 ` + cfg))
	for _, k := range []string{"segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes",
		"index.interval.bytes", "retention.ms", "retention.bytes", "cleanup.policy", "min.cleanable.dirty.ratio",
		"delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms", "max.message.bytes",
		"message.timestamp.type", "flush.messages", "flush.ms", "file.delete.delay.ms", "compression.type",
		"key.separator"} {
		found := false
		for _, have := range keys {
			found = found || have == k
		}
		if !found {
			t.Errorf("config lacks %s:\n%s", k, strings.Join(keys, "\n"))
		}
	}
	defaults := []string{"segment.bytes=1073741824", "retention.ms=604800000", "cleanup.policy=delete",
		"max.message.bytes=1048588", "segment.index.bytes=10485760", "index.interval.bytes=4096"}
	for _, kv := range defaults {
		m.ok(`grep -qx '` + kv + `' ` + cfg)
	}
	m.ok(`echo retention.ms=1000 > ` + cfg + ` && grep -qx retention.ms=1000 ` + cfg)
	m.ok(`echo retention.ms= > ` + cfg + ` && grep -qx retention.ms=604800000 ` + cfg)
	// Other topics keep their own settings.
	m.ok(`echo segment.bytes=65536 > ` + cfg + ` && grep -qx segment.bytes=1073741824 "$M/a.b_c-1/config"`)
}
