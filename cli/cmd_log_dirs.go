package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"
)

// log-dirs describes the partitions of a data directory like
// kafka-log-dirs.sh --describe: where each lives and how big it is. Its
// --json output keeps kafka-log-dirs' shape (version, brokers, logDirs,
// partitions with size, offsetLag and isFuture), so scripts written for
// Kafka read it, and adds segments and offsets.

func logDirsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "log-dirs",
		Usage:     "describe the partitions of a data directory: size, segments, offsets",
		ArgsUsage: "DATA_DIR",
		Description: `Prints one line per partition: its directory, size in bytes (sum of its
.log files), number of segments and log start and end offsets. With --json,
prints kafka-log-dirs' JSON shape. Reads the files only (no lock).

The log end offset is read as segfs get-offsets reads it: damage in the
batches it reads is printed on stderr with its file and position and makes
the exit status 1; a partial batch at the end of a partition's last segment
is a warning (nothing beside a running mount: an append in progress). With
--json, stdout holds only the JSON.

Example:

   segfs log-dirs ~/.segfs/data
   segfs log-dirs --json ~/.segfs/data | jq '.brokers[0].logDirs[0].partitions'`,
		Flags:  []ucli.Flag{jsonFlag()},
		Action: runLogDirs,
	}
}

// Kafka's kafka-log-dirs JSON, plus segfs's segments and offsets.
type logDirsJSON struct {
	Version int             `json:"version"`
	Brokers []logDirsBroker `json:"brokers"`
}

type logDirsBroker struct {
	Broker  int          `json:"broker"`
	LogDirs []logDirJSON `json:"logDirs"`
}

type logDirJSON struct {
	LogDir     string          `json:"logDir"`
	Error      *string         `json:"error"`
	Partitions []partitionJSON `json:"partitions"`
}

type partitionJSON struct {
	Partition      string `json:"partition"`
	Size           int64  `json:"size"`
	OffsetLag      int64  `json:"offsetLag"`
	IsFuture       bool   `json:"isFuture"`
	Segments       int    `json:"segments"`
	LogStartOffset int64  `json:"logStartOffset"`
	LogEndOffset   int64  `json:"logEndOffset"`
}

func runLogDirs(c *ucli.Context) error {
	if err := rejectLateFlags(c.Args().Slice()); err != nil {
		return err
	}
	if c.NArg() != 1 {
		return errors.New("log-dirs: usage: segfs log-dirs [flags] DATA_DIR")
	}
	dataDir := c.Args().First()
	parts, err := listPartitions(dataDir)
	if err != nil {
		return fmt.Errorf("log-dirs: %w", err)
	}
	logStart, err := readOffsetCheckpoint(filepath.Join(dataDir, "log-start-offset-checkpoint"))
	if err != nil {
		return fmt.Errorf("log-dirs: %w", err)
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("log-dirs: %w", err)
	}
	dir := logDirJSON{LogDir: abs, Partitions: []partitionJSON{}}
	errs, damaged := 0, []string(nil)
	live, _ := lockHolder(dataDir)
	for _, p := range parts {
		po, err := offsetsOf(p, logStart)
		if err != nil {
			return fmt.Errorf("log-dirs: %s: %w", p.Name, err)
		}
		if n := reportOffsets(c.App.ErrWriter, &po, live); n > 0 {
			errs += n
			damaged = append(damaged, p.Name)
		}
		dir.Partitions = append(dir.Partitions, partitionJSON{
			Partition: p.Name, Size: po.SizeBytes, Segments: po.Segments,
			LogStartOffset: po.LogStartOffset, LogEndOffset: po.LogEndOffset,
		})
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(logDirsJSON{Version: 1, Brokers: []logDirsBroker{{Broker: 0, LogDirs: []logDirJSON{dir}}}}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "DIR\tSIZE\tSEGMENTS\tLOG_START_OFFSET\tLOG_END_OFFSET")
		for i, p := range dir.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", parts[i].Path, p.Size, p.Segments, p.LogStartOffset, p.LogEndOffset)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if errs > 0 {
		return offsetsDamageError("log-dirs", dataDir, errs, damaged)
	}
	return nil
}
