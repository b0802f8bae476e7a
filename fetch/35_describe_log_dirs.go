package fetch

import (
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/segfs/segfs/logstore"
)

// DescribeLogDirs (key 35), versions 0-4: Admin.describeLogDirs, which
// `kafka-log-dirs.sh --describe`, kadm's DescribeAllLogDirs and UIs such
// as AKHQ and kafka-ui use to show how much disk each topic takes.
//
// The broker has one log directory, the data directory (its absolute
// path), as Kafka's ReplicaManager.describeLogDirs answers for a broker
// with one entry in log.dirs. Each partition shows the bytes of its .log
// files, Kafka's log.size (logstore's Partition.Size: the committed sizes
// the append, retention and compaction paths keep, read live without
// stat'ing files or waiting for appends), an offset lag of 0 (Kafka's
// high watermark minus log end; a single node has no replica behind) and
// is_future false (no AlterReplicaLogDirs). Null topics ask for every
// partition; otherwise only the partitions named that exist are listed,
// each once, and a topic none of whose partitions is listed is left out,
// as Kafka does (no per-partition error exists in this response).
// Topics come sorted by name, partitions by number. v3 adds a top-level
// error code, always 0 (segfs authorizes nothing, so
// CLUSTER_AUTHORIZATION_FAILED never applies). v4 (KIP-827) adds the
// file system's total and usable bytes, from statfs(2) of the data
// directory as Java's FileStore.getTotalSpace and getUsableSpace compute
// them (f_blocks and f_bavail, in fragment-size units); if the directory
// cannot be stat'ed, it is answered with KAFKA_STORAGE_ERROR and no
// topics, as Kafka answers for an offline log directory. v5 (KIP-1066,
// is_cordoned) is not served.
func init() { register(35, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(c *conn, h *reqHeader, r kmsg.Request) error {
	req := r.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{c.s.describeLogDir(req)}
	return c.send(h, resp)
}

// describeLogDir answers for the data directory.
func (s *Server) describeLogDir(req *kmsg.DescribeLogDirsRequest) kmsg.DescribeLogDirsResponseDir {
	d := kmsg.NewDescribeLogDirsResponseDir()
	d.Dir = s.store.Dir()
	total, usable, err := fsSpace(d.Dir)
	if err != nil {
		s.log.Warn("fetch: describe log dirs: cannot stat the data directory", "dir", d.Dir, "err", err)
		d.ErrorCode = kerr.KafkaStorageError.Code
		return d
	}
	d.TotalBytes, d.UsableBytes = total, usable
	describe := func(t *logstore.Topic, parts []*logstore.Partition) {
		if len(parts) == 0 {
			return
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = t.Name()
		for _, p := range parts {
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p.Num(), p.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		d.Topics = append(d.Topics, dt)
	}
	if req.Topics == nil {
		for _, t := range s.store.Topics() {
			describe(t, t.Partitions())
		}
		return d
	}
	// A topic may be named more than once, a partition more than once:
	// Kafka collects the request into a set of partitions.
	asked := map[string][]int32{}
	for _, rt := range req.Topics {
		asked[rt.Topic] = append(asked[rt.Topic], rt.Partitions...)
	}
	names := make([]string, 0, len(asked))
	for name := range asked {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t, err := s.store.Topic(name)
		if err != nil {
			continue
		}
		nums := asked[name]
		slices.Sort(nums)
		var parts []*logstore.Partition
		for _, n := range slices.Compact(nums) {
			if p, err := t.Partition(n); err == nil {
				parts = append(parts, p)
			}
		}
		describe(t, parts)
	}
	return d
}

// fsSpace returns the total and usable bytes of the file system holding
// dir, as Java's FileStore computes them (UnixFileStore: f_frsize times
// f_blocks, and times f_bavail, the blocks an unprivileged user may
// take), capped at MaxInt64 as Kafka caps an overflowing value.
func fsSpace(dir string) (total, usable int64, err error) {
	var st unix.Statfs_t
	for {
		err = unix.Statfs(dir, &st)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return -1, -1, err
	}
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	mul := func(blocks uint64) int64 {
		if unit != 0 && blocks > math.MaxInt64/unit {
			return math.MaxInt64
		}
		return int64(blocks * unit)
	}
	return mul(st.Blocks), mul(st.Bavail), nil
}
