package fs

import (
	"hash/fnv"
	"strconv"
	"time"
)

// maxNameLen is the longest name Lookup accepts. Kernels pass FUSE names far
// longer than NAME_MAX; nothing in the view is longer than 255 bytes.
const maxNameLen = 255

// parseOffsetName parses the N of offset/N. Only canonical decimal is
// accepted: the number must survive strconv.ParseUint(…, 10, 63) and
// formatting it back must give the same string, so "01", "+1", " 1",
// "1e3", "0x10" and "1\n" are not offsets. This keeps one name per offset,
// and so one node per offset. DESIGN.md makes "not a decimal number"
// ENOENT; "007" is ENOENT too, as /proc/007 is on Linux (procfs takes
// no leading zero either): an alias would give offset 7 a second dentry,
// and a second node whose st_ino, if derived from the name as every other
// one is, would differ from offset/7's.
func parseOffsetName(name string) (int64, bool) {
	if name == "" || len(name) > 19 {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 63)
	if err != nil {
		return 0, false
	}
	if strconv.FormatUint(n, 10) != name {
		return 0, false
	}
	return int64(n), true
}

// parsePartitionName parses the N of TOPIC/N the same canonical way, as a
// non-negative int32.
func parsePartitionName(name string) (int32, bool) {
	if name == "" || len(name) > 10 {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 31)
	if err != nil || strconv.FormatUint(n, 10) != name {
		return 0, false
	}
	return int32(n), true
}

// parseTimeName parses the T of time/T into epoch milliseconds: either
// canonical decimal epoch milliseconds ("1732875600000") or RFC 3339
// ("2026-11-29T10:00:00Z", "2026-11-29T11:00:00.250+01:00", and a leap
// second, "2016-12-31T23:59:60Z", as the next second's start). Fractions
// below a millisecond round up, because time/T names the first record at
// or after T and record timestamps are whole milliseconds.
func parseTimeName(name string) (int64, bool) {
	if name == "" || len(name) > 64 {
		return 0, false
	}
	if name[0] >= '0' && name[0] <= '9' {
		if ms, ok := parseOffsetName(name); ok {
			return ms, true
		}
	}
	// RFC 3339 always has a 'T' (or 't') at index 10; checking first
	// avoids time.Parse's cost for the obvious non-times.
	if len(name) < 20 || (name[10] != 'T' && name[10] != 't') {
		return 0, false
	}
	if !zoneInRange(name) {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, rfc3339Upper(name))
	if err != nil {
		var ok bool
		if t, ok = parseLeapSecond(rfc3339Upper(name)); !ok {
			return 0, false
		}
	}
	// time.Parse accepts years outside what milliseconds since the epoch
	// hold; keep the arithmetic in range.
	if t.Year() < 1 || t.Year() > 9999 {
		return 0, false
	}
	ms := t.UnixMilli()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms, true
}

// parseLeapSecond parses an RFC 3339 time whose second is 60, which
// time.Parse rejects and RFC 3339 (§5.6, §5.7) allows for a leap second:
// 23:59:60 UTC on the last day of a month (05:29:60+05:30 is the same
// one). It stands for the start of the next second, whatever its
// fraction, as POSIX time has no name for the leap second itself: every
// instant of it is after 23:59:59.999 and not after the next 00:00:00, so
// T1 < T2 still gives time/T1 <= time/T2. Second 60 anywhere else is not
// a time.
func parseLeapSecond(name string) (time.Time, bool) {
	if len(name) < 20 || name[17:19] != "60" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, name[:17]+"59"+name[19:])
	if err != nil {
		return time.Time{}, false
	}
	u := t.UTC()
	next := u.Truncate(time.Second).Add(time.Second)
	if u.Hour() != 23 || u.Minute() != 59 || u.Second() != 59 || next.Day() != 1 {
		return time.Time{}, false
	}
	return next, true
}

// zoneInRange reports whether a numeric zone offset at the end of name
// ("+01:00") has an hour of at most 23 and a minute of at most 59, as RFC
// 3339 (§5.6: time-numoffset) requires. time.Parse takes "+24:00" and
// "+23:60" and moves the instant by them, so time/...+24:00 resolved,
// where anything that is not a time is ENOENT (DESIGN.md). A name ending
// in Z has no numeric offset; one too short or malformed is left to
// time.Parse.
func zoneInRange(name string) bool {
	if len(name) < 6 {
		return true
	}
	z := name[len(name)-6:]
	if (z[0] != '+' && z[0] != '-') || z[3] != ':' {
		return true
	}
	return z[1:3] <= "23" && z[4:6] <= "59"
}

// rfc3339Upper turns the lower-case 't' (at index 10, checked by the
// caller) and a final 'z' that RFC 3339 (§5.6) allows into the upper-case
// ones time.Parse requires. Only those two places: anything else stays as
// it was for time.Parse to judge.
func rfc3339Upper(name string) string {
	if name[10] != 't' && name[len(name)-1] != 'z' {
		return name
	}
	b := []byte(name)
	if b[10] == 't' {
		b[10] = 'T'
	}
	if b[len(b)-1] == 'z' {
		b[len(b)-1] = 'Z'
	}
	return string(b)
}

// inoFor derives a deterministic inode number from a node's path inside
// the mount, so that a node keeps its st_ino across kernel forgets and
// across remounts (`tail -F` compares inode numbers). The value avoids the
// reserved numbers 0 and 1 and go-fuse's automatic range (2^63 and up).
func inoFor(parts ...string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("segfs"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	ino := h.Sum64() &^ (1 << 63)
	if ino < 2 {
		ino += 2
	}
	return ino
}
