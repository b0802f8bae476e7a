package fs

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseOffsetName(t *testing.T) {
	good := map[string]int64{"0": 0, "1": 1, "42": 42, "9223372036854775807": 1<<63 - 1}
	for name, want := range good {
		if got, ok := parseOffsetName(name); !ok || got != want {
			t.Errorf("parseOffsetName(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "01", "00", "+1", "-1", " 1", "1 ", "1e3", "0x10", "1\n",
		"9223372036854775808", "99999999999999999999", "１", "1.0", "abc", "1_000",
		"007", "-0", "+7", " 7", "7 ", "0x7", "٣", "0000000000000000007", "00000000000000000000007"} {
		if got, ok := parseOffsetName(name); ok {
			t.Errorf("parseOffsetName(%q) = %d, accepted", name, got)
		}
	}
}

func TestParseTimeName(t *testing.T) {
	good := map[string]int64{
		"1732875600000":                  1732875600000,
		"0":                              0,
		"2026-11-29T10:00:00Z":           time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"2026-11-29T11:00:00+01:00":      time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"2026-11-29T10:00:00.250Z":       time.Date(2026, 11, 29, 10, 0, 0, 250e6, time.UTC).UnixMilli(),
		"2026-11-29T10:00:00.000000001Z": time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixMilli() + 1,
		"2026-11-29t10:00:00z":           time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"2026-11-29t11:00:00.250+01:00":  time.Date(2026, 11, 29, 10, 0, 0, 250e6, time.UTC).UnixMilli(),
		"2026-11-29T15:30:00.5+05:30":    time.Date(2026, 11, 29, 10, 0, 0, 500e6, time.UTC).UnixMilli(),
		"2026-11-29T04:30:00-05:30":      time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"2026-11-30T09:59:00+23:59":      time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixMilli(),
		// Leap seconds (RFC 3339 §5.7): the start of the next second.
		"2016-12-31T23:59:60Z":        time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		"2016-12-31t23:59:60z":        time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		"2016-12-31T23:59:60.999999Z": time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		"2017-01-01T05:29:60+05:30":   time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		"2016-12-31T18:59:60.5-05:00": time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		"2015-06-30T23:59:60Z":        time.Date(2015, 7, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
	}
	for name, want := range good {
		if got, ok := parseTimeName(name); !ok || got != want {
			t.Errorf("parseTimeName(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "yesterday", "2026-11-29", "2026-11-29 10:00:00Z", "01", "-5",
		"2026-11-29T10:00:00", "2026-13-29T10:00:00Z", "2026-11-29T10:00:00Zz", "2026-11-29x10:00:00Z", "1e3", "99999999999999999999",
		// Second 60 only for a leap second: 23:59:60 UTC at a month's end.
		"2016-12-31T23:59:61Z", "2016-12-31T22:59:60Z", "2016-12-31T23:58:60Z", "2016-12-30T23:59:60Z",
		"2016-12-31T23:59:60+05:30", "2016-12-31T23:59:60", "2016-12-31T23:59:60.Z", "2016-12-31T24:00:00Z",
		// RFC 3339's zone offset is 00:00 to 23:59, either way.
		"2026-11-29T10:00:00+24:00", "2026-11-29T10:00:00-24:00", "2026-11-29T10:00:00+23:60", "2026-11-29T10:00:00-00:99"} {
		if got, ok := parseTimeName(name); ok {
			t.Errorf("parseTimeName(%q) = %d, accepted", name, got)
		}
	}
}

func TestParsePartitionName(t *testing.T) {
	for name, want := range map[string]int32{"0": 0, "7": 7, "2147483647": 1<<31 - 1} {
		if got, ok := parsePartitionName(name); !ok || got != want {
			t.Errorf("parsePartitionName(%q) = %d, %v", name, got, ok)
		}
	}
	for _, name := range []string{"", "01", "-1", "2147483648", "x", "1 "} {
		if _, ok := parsePartitionName(name); ok {
			t.Errorf("parsePartitionName(%q) accepted", name)
		}
	}
}

func TestInoFor(t *testing.T) {
	a, b := inoFor("orders", "0", "data"), inoFor("orders", "0", "data")
	if a != b {
		t.Fatal("inode numbers are not deterministic")
	}
	if a < 2 || a >= 1<<63 {
		t.Fatalf("ino %d outside [2, 2^63)", a)
	}
	if inoFor("orders", "0", "data") == inoFor("orders", "1", "data") ||
		inoFor("a", "bc") == inoFor("ab", "c") {
		t.Fatal("distinct paths share an inode number")
	}
}

func FuzzParseOffsetName(f *testing.F) {
	for _, s := range []string{"0", "01", "9223372036854775807", "9223372036854775808", "+1", "1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := parseOffsetName(name)
		if !ok {
			return
		}
		if n < 0 || strconv.FormatInt(n, 10) != name {
			t.Fatalf("%q parsed as %d, which is not its canonical form", name, n)
		}
	})
}

func FuzzParseTimeName(f *testing.F) {
	for _, s := range []string{"1732875600000", "2026-11-29T10:00:00Z", "2026-11-29T10:00:00.5+05:30", "x", "2026-11-29t10:00:00z", "2026-11-29t10:00:00.5+05:30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ms, ok := parseTimeName(name)
		if !ok {
			return
		}
		if n, isNum := parseOffsetName(name); isNum {
			if n != ms {
				t.Fatalf("%q: epoch ms %d, parsed %d", name, n, ms)
			}
			return
		}
		// RFC 3339 allows a lower-case 't' and 'z' (§5.6); time.Parse
		// takes only upper case, and no other letter may differ.
		upper := strings.ToUpper(name)
		if len(upper) != len(name) {
			t.Fatalf("%q accepted with non-ASCII letters", name)
		}
		for i := range name {
			if name[i] != upper[i] && i != 10 && i != len(name)-1 {
				t.Fatalf("%q accepted with a lower-case letter at %d", name, i)
			}
		}
		tm, err := time.Parse(time.RFC3339Nano, upper)
		if err != nil {
			// A leap second: the next second's start, 00:00:00 UTC.
			leap, lerr := time.Parse(time.RFC3339Nano, upper[:17]+"59"+upper[19:])
			if upper[17:19] != "60" || lerr != nil {
				t.Fatalf("%q accepted but not RFC 3339: %v", name, err)
			}
			next := leap.UTC().Truncate(time.Second).Add(time.Second)
			if u := next.UTC(); u.Hour() != 0 || u.Minute() != 0 || u.Second() != 0 || u.Day() != 1 || ms != next.UnixMilli() {
				t.Fatalf("%q: %d ms is not the start of a month after a leap second", name, ms)
			}
			return
		}
		if d := ms*1e6 - tm.UnixNano(); tm.Year() > 1700 && tm.Year() < 2200 && (d < 0 || d >= 1e6) {
			t.Fatalf("%q: %d ms is not the ceiling of %v", name, ms, tm)
		}
	})
}
