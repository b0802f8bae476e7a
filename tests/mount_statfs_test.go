package tests

import (
	"strings"
	"testing"
)

// TestMountStatfsEverywhere: statfs(2) of any path in the mount reports the
// data directory's filesystem, as at the root. Only the root answered; every
// other node got go-fuse's zeros, so `df MOUNT/orders/0/data` showed a
// 0-byte filesystem with nothing available and `getconf NAME_MAX` of a
// partition said 0.
func TestMountStatfsEverywhere(t *testing.T) {
	m := mntNew(t)
	m.ok(`mkdir "$M/orders" && seq 1 5 >> "$M/orders/0/data" && ls "$M/orders/0/offset/2" "$M/orders/0/time/0" >/dev/null`)
	// Name length, fundamental block size and total blocks: the fields
	// that do not move while other processes use the disk.
	want := m.ok(`stat -f -c '%l %S %b' "$D"`)
	if strings.HasPrefix(want, "0 ") {
		t.Fatalf("the data directory's statfs has no name length: %q", want)
	}
	seg := strings.TrimSpace(m.ok(`ls "$M/orders/0/segments" | grep '\.log$'`))
	for _, p := range []string{"", "orders", "orders/config", "orders/0", "orders/0/data", "orders/0/status",
		"orders/0/offset", "orders/0/offset/2", "orders/0/time", "orders/0/time/0", "orders/0/segments",
		"orders/0/segments/" + seg} {
		if got := m.ok(`stat -f -c '%l %S %b' "$M/` + p + `"`); got != want {
			t.Errorf("stat -f of MOUNT/%s = %q, want the data directory's %q", p, got, want)
		}
	}
	if got := m.ok(`getconf NAME_MAX "$M/orders/0"`); got != "255\n" {
		t.Errorf("getconf NAME_MAX of a partition = %q, want 255", got)
	}
	if got := m.ok(`df --output=size "$M/orders/0/data" | tail -n1`); strings.TrimSpace(got) == "0" {
		t.Errorf("df of data reports a 0-byte filesystem")
	}
}
