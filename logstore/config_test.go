package logstore

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckUnfinishedConfigLine: the mount refuses an unfinished config
// line at write(2) when no continuation can make it valid. The check must
// never refuse a prefix of a line that is valid once complete (the user
// is still typing it), so every prefix of every valid line below must
// pass; and the lines that are doomed must be refused.
func TestCheckUnfinishedConfigLine(t *testing.T) {
	valid := map[string][]string{
		"segment.bytes":             {"14", "1073741824", " +2147483647 ", "\t100\t"},
		"retention.ms":              {"-1", "0", "604800000", "9223372036854775807", "  -1  "},
		"retention.bytes":           {"-1", "+5"},
		"max.message.bytes":         {"1048588", "0"},
		"compression.type":          {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd", " zstd  "},
		"message.timestamp.type":    {"CreateTime", "LogAppendTime", " LogAppendTime "},
		"cleanup.policy":            {"delete", "compact", "compact,delete", "delete, compact", " compact , delete ", "compact,compact"},
		"min.cleanable.dirty.ratio": {"0.5", "1", "0", "1e-1", " 0.25 "},
		"key.separator":             {"=", " ", "\t", "::", strings.Repeat("x", 64)},
	}
	for k, values := range valid {
		for _, v := range values {
			if _, err := withOverrides(map[string]string{k: trimValue(k, v)}); err != nil {
				t.Fatalf("test value %s=%q is not valid: %v", k, v, err)
			}
			line := k + "=" + v
			for i := 0; i <= len(line); i++ {
				if err := CheckUnfinishedConfigLine([]byte(line[:i])); err != nil {
					t.Errorf("prefix %q of the valid line %q refused: %v", line[:i], line, err)
				}
			}
		}
	}

	doomed := []string{
		"retension.ms=1000",
		"retention.ms=abc",
		"retention.ms=1x",
		"retention.ms=--1",
		"retention.ms=1 2",
		"segment.bytes=1.5",
		"compression.type=brotli",
		"compression.type=gzipp",
		"compression.type=gzip x",
		"message.timestamp.type=createtime",
		"cleanup.policy=delete,bogus",
		"cleanup.policy=comp,delete",
		"cleanup.policy=delete,,compact",
		"cleanup.policy=deletex",
		"key.separator=" + strings.Repeat("x", 65),
		"key.separator=a\x00",
		// No '=' yet: no key starts with it, or it ended in a blank.
		"bogus",
		"  bogus",
		"retention.msx",
		"retention .ms",
		"retention.ms x",
		"retention.m ",
		"\tsegment.bytes\t1",
	}
	for _, line := range doomed {
		err := CheckUnfinishedConfigLine([]byte(line))
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("doomed unfinished line %q: %v, want ErrInvalidConfig", line, err)
		}
		// What it guards: the complete line is refused too, and so is
		// the line however it goes on.
		for _, rest := range []string{"", "=1", "ms=1", " = 1"} {
			if changes, perr := ParseConfigText([]byte(line + rest + "\n")); perr == nil {
				if _, serr := withOverrides(changes); serr == nil {
					t.Errorf("%q is refused unfinished but %q is valid complete", line, line+rest)
				}
			}
		}
	}

	// Not checked until complete: comments, lines without '=', a number's
	// range, and a float's syntax.
	for _, line := range []string{"# x=y", "  #retention.ms=abc", "#bogus", "", "  ", "retention", " retention.ms", "retention.ms \t", "segment.bytes=1", "retention.ms=99999999999999999999", "min.cleanable.dirty.ratio=x"} {
		if err := CheckUnfinishedConfigLine([]byte(line)); err != nil {
			t.Errorf("unfinished %q refused: %v", line, err)
		}
	}
}

// trimValue is what ParseConfigText makes of a value: trimmed, except the
// separator, which is taken verbatim.
func trimValue(k, v string) string {
	if k == "key.separator" {
		return v
	}
	return strings.TrimSpace(v)
}

// TestUpdateConfigConcurrentSet: UpdateConfig computes its changes from
// the settings of one moment; a SetConfig (a write to MOUNT/T/config) that
// commits after that moment and before the update's own commit is not
// overwritten by changes computed from the older value: the update runs
// again on the new settings. The SetConfig is made from inside fn, which
// runs with no lock held, so the interleaving is forced, not raced.
func TestUpdateConfigConcurrentSet(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	tp, err := s.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	appendDelete := func(cfg Config, overrides map[string]string) (map[string]string, error) {
		seen = append(seen, cfg.CleanupPolicy)
		if len(seen) == 1 {
			if err := tp.SetConfig(map[string]string{"cleanup.policy": "compact", "retention.ms": "5000"}); err != nil {
				t.Fatal(err)
			}
		}
		// Kafka's APPEND delete to cleanup.policy.
		v := cfg.CleanupPolicy
		if !strings.Contains(v, "delete") {
			v += ",delete"
		}
		return map[string]string{"cleanup.policy": v}, nil
	}
	if err := tp.UpdateConfig(appendDelete); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "delete" || seen[1] != "compact" {
		t.Errorf("fn saw cleanup.policy %q, want the snapshot, then the concurrent value", seen)
	}
	if c := tp.Config(); c.CleanupPolicy != "compact,delete" || c.RetentionMs != 5000 {
		t.Fatalf("after a SetConfig between the snapshot and the commit: cleanup.policy=%s retention.ms=%d, want compact,delete and 5000",
			c.CleanupPolicy, c.RetentionMs)
	}

	// An error from fn is returned as it is; a dry run changes nothing;
	// the changes are checked as SetConfig's.
	refused := errors.New("refused")
	if err := tp.UpdateConfig(func(Config, map[string]string) (map[string]string, error) { return nil, refused }); err != refused {
		t.Errorf("fn's error: got %v", err)
	}
	set := func(k, v string) ConfigUpdate {
		return func(Config, map[string]string) (map[string]string, error) { return map[string]string{k: v}, nil }
	}
	if err := tp.CheckConfigUpdate(set("retention.ms", "7")); err != nil || tp.Config().RetentionMs != 5000 {
		t.Errorf("dry run: %v, retention.ms %d", err, tp.Config().RetentionMs)
	}
	if err := tp.UpdateConfig(set("retention.ms", "soon")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad value: %v", err)
	}
	if err := tp.CheckConfigUpdate(set("retention.ms", "soon")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad value, dry run: %v", err)
	}
	s.Close()
	s = openStore(t, dir, nil)
	defer s.Close()
	tp, _ = s.Topic("t")
	if ov := tp.Overrides(); len(ov) != 2 || ov["cleanup.policy"] != "compact,delete" || ov["retention.ms"] != "5000" {
		t.Fatalf("after reopening: %v", ov)
	}
}

// TestConfigSnapshotConsistent: the effective config and the overrides
// ConfigSnapshot returns are of one moment, while SetConfig sets and
// resets an override beside it. Read one after the other (as
// DescribeConfigs did), an override could show with its old value.
func TestConfigSnapshotConsistent(t *testing.T) {
	s := openStore(t, t.TempDir(), newClock())
	defer s.Close()
	tp, err := s.CreateTopic("snap", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 0; i < 300; i++ {
			v := "3600000"
			if i%2 == 1 {
				v = ""
			}
			if err := tp.SetConfig(map[string]string{"retention.ms": v}); err != nil {
				errc <- err
				return
			}
		}
	}()
	for checks := 0; ; checks++ {
		select {
		case <-done:
			select {
			case err := <-errc:
				t.Fatal(err)
			default:
			}
			if checks == 0 {
				t.Fatal("no snapshot was taken while SetConfig ran")
			}
			return
		default:
		}
		cfg, ovr := tp.ConfigSnapshot()
		_, set := ovr["retention.ms"]
		if set != (cfg.RetentionMs == 3600000) {
			<-done // the store must not be closed under the writer
			t.Fatalf("override set %v with retention.ms %d in one snapshot", set, cfg.RetentionMs)
		}
	}
}
