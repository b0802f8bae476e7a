package logstore

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// TestConfigBoundsAsKafka: every numeric key takes exactly the values
// Kafka's LogConfig validators take (atLeast/between, and the 32-bit range
// of its INT keys), as of Kafka 3.x for segment.bytes (4.0 raised its
// minimum to 1 MiB; segfs keeps 14, KAFKA-FORMAT.md §12). retention.bytes
// has no validator in Kafka: any long, any negative one meaning no size
// limit.
func TestConfigBoundsAsKafka(t *testing.T) {
	const noMin = math.MinInt64
	bounds := []struct {
		key      string
		min, max int64
	}{
		{"segment.bytes", 14, math.MaxInt32},
		{"segment.ms", 1, math.MaxInt64},
		{"segment.jitter.ms", 0, math.MaxInt64},
		{"segment.index.bytes", 4, math.MaxInt32},
		{"index.interval.bytes", 0, math.MaxInt32},
		{"retention.ms", -1, math.MaxInt64},
		{"retention.bytes", noMin, math.MaxInt64},
		{"delete.retention.ms", 0, math.MaxInt64},
		{"min.compaction.lag.ms", 0, math.MaxInt64},
		{"max.compaction.lag.ms", 1, math.MaxInt64},
		{"max.message.bytes", 0, math.MaxInt32},
		{"flush.messages", 1, math.MaxInt64},
		{"flush.ms", 0, math.MaxInt64},
		{"file.delete.delay.ms", 0, math.MaxInt64},
	}
	set := func(k, v string) error {
		c, err := withOverrides(map[string]string{k: v})
		if err == nil {
			err = checkValues(&c)
		}
		if err == nil {
			if got, _ := c.Get(k); got != v {
				t.Errorf("%s=%s reads back as %s", k, v, got)
			}
		}
		return err
	}
	for _, b := range bounds {
		ok := []string{strconv.FormatInt(b.min, 10), strconv.FormatInt(b.max, 10)}
		bad := []string{"x", "1.5", ""}
		if b.min != noMin {
			bad = append(bad, strconv.FormatInt(b.min-1, 10))
		}
		if b.max == math.MaxInt32 {
			bad = append(bad, strconv.FormatInt(b.max+1, 10))
		} else {
			bad = append(bad, "9223372036854775808")
		}
		if b.key == "retention.bytes" {
			ok = append(ok, "-5", "-1", "0")
		}
		for _, v := range ok {
			if err := set(b.key, v); err != nil {
				t.Errorf("%s=%s refused: %v (Kafka takes it)", b.key, v, err)
			}
		}
		for _, v := range bad {
			if err := set(b.key, v); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s=%q: %v, want ErrInvalidConfig (Kafka refuses it)", b.key, v, err)
			}
		}
	}
	for _, v := range []string{"0", "1", "0.5"} {
		if err := set("min.cleanable.dirty.ratio", v); err != nil {
			t.Errorf("min.cleanable.dirty.ratio=%s refused: %v", v, err)
		}
	}
	for _, v := range []string{"-0.1", "1.01", "x"} {
		if err := set("min.cleanable.dirty.ratio", v); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("min.cleanable.dirty.ratio=%s: %v, want ErrInvalidConfig", v, err)
		}
	}

	// Kafka's validateValues: min.compaction.lag.ms <= max.compaction.lag.ms.
	c, err := withOverrides(map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
	if err == nil {
		err = checkValues(&c)
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("min.compaction.lag.ms=10 with max.compaction.lag.ms=5: %v, want ErrInvalidConfig", err)
	}
}
