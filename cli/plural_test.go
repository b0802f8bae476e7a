package cli

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int64
		noun string
		want string
	}{
		{1, "segment", "1 segment"},
		{0, "segment", "0 segments"},
		{2, "batch", "2 batches"},
		{-1, "byte", "-1 byte"},
		{1, "entry", "1 entry"},
		{3, "entry", "3 entries"},
		{5, "unused preallocated slot", "5 unused preallocated slots"},
		{2, "key", "2 keys"},
	} {
		if got := plural(c.n, c.noun); got != c.want {
			t.Errorf("plural(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
