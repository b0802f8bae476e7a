package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// get-offsets answers "where does each partition start and end" without a
// broker, like kafka-get-offsets.sh. It reads segment names, the
// log-start-offset checkpoint and the batches at the end of each
// partition's last segment, and takes no lock, so it works beside a
// running mount (whose in-flight append may not be counted yet). What it
// meets in those batches it reports as verify does: damage makes the exit
// status 1, as the log end it prints may then not be the log's end.

func getOffsetsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "get-offsets",
		Usage:     "print the log start and end offset of each partition",
		ArgsUsage: "DATA_DIR [TOPIC[/PARTITION]]",
		Description: `Prints one line per partition: "topic partition logStartOffset
logEndOffset", sorted by topic and partition. The log end offset is the
offset the next record will get. Reads the files only (no lock), so it also
works beside a running mount.

The log end is read from the batches at the end of each partition's last
segment (from its last index entry on), checked as segfs verify checks them.
Damage there (a corrupt or unreadable batch) is printed on stderr with its
file and position, and makes the exit status 1: the log end printed for that
partition may not be its end. A partial batch at the end of the segment, which
a crash in an append leaves and the next mount truncates, is a warning on
stderr; the exit status stays 0. Beside a running mount it is an append in
progress, not counted yet, and nothing is said. segfs verify checks every
segment.

Example:

   segfs get-offsets ~/.segfs/data orders/0
   orders 0 0 1000`,
		Flags:  []ucli.Flag{jsonFlag()},
		Action: runGetOffsets,
	}
}

// partitionOffsetsJSON is one partition in --json output.
type partitionOffsetsJSON struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	LogStartOffset int64  `json:"logStartOffset"`
	LogEndOffset   int64  `json:"logEndOffset"`
}

func runGetOffsets(c *ucli.Context) error {
	if err := rejectLateFlags(c.Args().Slice()); err != nil {
		return err
	}
	if c.NArg() < 1 || c.NArg() > 2 {
		return errors.New("get-offsets: usage: segfs get-offsets [flags] DATA_DIR [TOPIC[/PARTITION]]")
	}
	dataDir := c.Args().Get(0)
	parts, err := selectPartitions(dataDir, c.Args().Get(1))
	if err != nil {
		return fmt.Errorf("get-offsets: %w", err)
	}
	logStart, err := readOffsetCheckpoint(filepath.Join(dataDir, "log-start-offset-checkpoint"))
	if err != nil {
		return fmt.Errorf("get-offsets: %w", err)
	}
	var rows []partitionOffsetsJSON
	errs, damaged := 0, []string(nil)
	live, _ := lockHolder(dataDir)
	for _, p := range parts {
		po, err := offsetsOf(p, logStart)
		if err != nil {
			return fmt.Errorf("get-offsets: %s: %w", p.Name, err)
		}
		if n := reportOffsets(c.App.ErrWriter, &po, live); n > 0 {
			errs += n
			damaged = append(damaged, p.Name)
		}
		rows = append(rows, partitionOffsetsJSON{p.Topic, p.Partition, po.LogStartOffset, po.LogEndOffset})
	}
	w := c.App.Writer
	if c.Bool("json") {
		if rows == nil {
			rows = []partitionOffsetsJSON{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		for _, r := range rows {
			fmt.Fprintf(w, "%s %d %d %d\n", r.Topic, r.Partition, r.LogStartOffset, r.LogEndOffset)
		}
	}
	if errs > 0 {
		return offsetsDamageError("get-offsets", dataDir, errs, damaged)
	}
	return nil
}

// selectPartitions lists the partitions of dataDir, narrowed by a filter
// "TOPIC" or "TOPIC/PARTITION" (empty: all). A filter that matches nothing
// is an error, so that a typo is not mistaken for an empty topic.
func selectPartitions(dataDir, filter string) ([]*partitionDir, error) {
	parts, err := listPartitions(dataDir)
	if err != nil || filter == "" {
		return parts, err
	}
	topic, partStr, hasPart := strings.Cut(filter, "/")
	want := int64(-1)
	if hasPart {
		want, err = strconv.ParseInt(partStr, 10, 32)
		if err != nil || want < 0 {
			return nil, fmt.Errorf("bad partition %q in %q", partStr, filter)
		}
	}
	var out []*partitionDir
	for _, p := range parts {
		if p.Topic == topic && (!hasPart || int64(p.Partition) == want) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		if hasPart {
			return nil, fmt.Errorf("unknown partition %s in %s", filter, dataDir)
		}
		return nil, fmt.Errorf("unknown topic %s in %s", topic, dataDir)
	}
	return out, nil
}
