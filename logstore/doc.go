// Package logstore keeps Kafka-format partition logs in a data directory:
// record batches in 20-digit segment files with sparse .index and
// .timeindex files, Kafka's checkpoint files, and recovery after a crash.
// The FUSE view (fs) and the Kafka protocol server (fetch) are adapters
// over it.
//
// # Layout
//
// DATA_DIR holds one TOPIC-N directory per partition, Kafka's
// recovery-point-offset-checkpoint, log-start-offset-checkpoint and
// cleaner-offset-checkpoint, the clean-shutdown marker
// .kafka_cleanshutdown, a .lock file, and files of segfs's own:
// segfs-topics.json (topic ids and config overrides, which Kafka keeps in
// its controller, when each topic's config last changed, and the topic
// creations and partition additions under way, which Open rolls back if a
// crash interrupted them) and segfs-producer-id. Anything else is left
// alone, __cluster_metadata-0 too: KRaft's metadata log, in a data
// directory copied from a Kafka broker, is no topic (a warning says it is
// skipped), and no topic may take that name (CheckNewTopicName). Each
// partition directory has Kafka's NNN.log/.index/.timeindex,
// partition.metadata, leader-epoch-checkpoint and producer .snapshot
// files, plus NNN.textindex, segfs's sparse map from rendered text
// positions to batches, and segfs-unfinished-lines, the journal of the
// mount's writers' unfinished lines ("Unfinished lines"). A producer
// snapshot holds the idempotence state (the last five batches of each
// producer id) and, for a directory written by Kafka, the first offset of
// each producer's ongoing transaction, which bounds the last stable offset
// (LastStableOffset), and the coordinator epoch of its last marker; a
// producer is dropped ProducerIDExpiration (Kafka's
// producer.id.expiration.ms, a day) after its last batch's or marker's
// timestamp, unless its transaction is open. At load the state is the
// newest snapshot's plus the batch headers after it; without a snapshot,
// after an unclean shutdown, the headers from the log start, as Kafka's
// rebuildProducerState reads them (producer.go: loadProducers). As in
// Kafka, a snapshot is written at every roll (the new base offset), at
// close (the log end) and after a load that scanned below the active
// segment, with or without producers, so a crash costs a scan of the
// active segment only; one with no producers skips the fsyncs. A
// snapshot, like every file segfs rewrites whole (checkpoints, the topics
// file, text maps), is not rewritten when the file already holds the same
// bytes, and an index reopened for appends and closed unchanged gets its
// mtime back after the trim: a mount and clean unmount of an idle data
// directory moves no partition directory's or file's mtime.
// A NNN.txnindex copied from Kafka (aborted transactions) is read when the
// partition loads and served to read_committed fetches (txnindex.go); one
// that fails Kafka's check is rebuilt from the log's ABORT markers, as
// Kafka's recovery of its segment does.
// segfs writes one only when compaction merges segments that had one, and
// when WriteTxnMarker (txnmarker.go: the admin's way to end a transaction
// Kafka left open) aborts a transaction: the entry goes to the segment of
// its ABORT marker, after the marker is flushed, and a load that finds an
// ABORT marker ending a transaction without its entry (a crash in
// between) writes it. Retention and compaction move it with its segment;
// compaction drops the entry of an ABORT marker it removes.
//
// # Leader epochs
//
// Each open of a partition is a new leadership, as a Kafka broker's
// restart is: its epoch is one above the latest in leader-epoch-checkpoint
// (0 for a new partition), appended batches carry it, and its entry is
// written before its first batch (epochs.go: why that, and no write on an
// idle open, keeps an epoch that lost records from coming back after a
// power cut). The cache is loaded, reconciled and truncated as Kafka's
// loader does; a missing or unreadable checkpoint is rebuilt from the
// batches, so a Kafka directory keeps its epochs.
//
// # Durability
//
// An append is a pwrite of one whole batch to the active segment: when
// AppendLines or AppendBatch returns, the bytes are in the page cache and
// survive the death of the process. flush.messages, flush.ms and Flush make
// them durable (data, then indexes, then the recovery point). A roll seals
// and fsyncs the old segment before the new one takes appends, so that a
// power cut can never keep a later segment beside a rolled one that ends
// short; so that this fsync finds little to write, bulk appends start the
// writeback of every 8 MiB they append (kickWriteback), off the
// appender's path. A failed write is truncated away; if that
// fails too, or an fsync fails, the partition is fenced and refuses appends
// until a restart recovers it. Every fsync that an acknowledgement or a
// recovery point rests on is followed by a size change of the data
// directory's .segfs-sync-probe: ext4 can report success from an fsync
// whose transaction its aborting journal dropped, and a metadata change
// after that fails (syncProbe), so the flush fails instead. Batches of 64 KiB or more first reserve the
// segment's blocks a few megabytes ahead with fallocate(FALLOC_FL_KEEP_SIZE)
// (Kafka's preallocate, but invisible: the file size is always the bytes
// written); sealing gives back the unused tail, and a failed reservation
// only stops reserving. Close writes checkpoints and the
// clean-shutdown marker; without the marker, Open validates every batch
// from the recovery point on and truncates at the first torn or corrupt one,
// deleting the segments after it. A segment below the recovery point whose
// indexes do not match its .log is recovered the same way, but the
// segments after it stay: they reached the disk before the checkpoint.
// Messages of Kafka's old formats (magic 0 or 1, a broker that once ran
// with log.message.format.version < 0.11) whose CRC-32 checks out are
// never truncated as torn: Open refuses the data directory, naming the
// file and position (LegacyFormatError; legacy.go). A segment that starts
// with them is found before anything in the directory changes; ones after
// magic 2 batches are found by recovery, which leaves the .log as it was.
// A log that ends below its checkpointed log start (a DeleteRecords
// checkpointed, then a power cut took the unflushed records it passed) is
// deleted whole, producer state included, and restarts empty at the log
// start, as Kafka's loader does, so that no offset is handed out twice.
//
// # Unfinished lines
//
// A writer of the mount whose write(2) ended inside a line holds the
// line's start in the daemon until more bytes or its close make it a
// record; those bytes were acknowledged, so each change of a writer's
// unfinished line (LineWriter: Extend, AppendLines, Set) is appended to
// segfs-unfinished-lines in the partition directory first, with one pwrite
// and no fsync (unfinished.go has the entry format). A WRITE that stores
// lines and changes the line writes its entry under the append lock before
// the batches, valid only once the log reaches the end of those batches:
// an entry whose batches a crash lost did not happen (a WRITE whose lines
// take several batches writes two in the same pwrite: no line once the
// first batch, which holds the line it completes, is in; the new line
// once all are). An append that fails
// after its entry rewrites the entry in place (the same bytes, so a full
// disk cannot refuse it) as never valid, or, after a short write, as "no
// line". Writers of whole lines write nothing. The journal is cut to
// nothing when no writer has a line, and rewritten (temp file and rename)
// with only the current lines when it passes 1 MiB and is more than twice
// their size; a clean close empties it. The file exists, empty, from the
// partition's creation (or its first open by a segfs that journals) and is
// never removed: creating or removing it would move the partition
// directory's mtime, which the mount shows as the topic's and the
// partition's, under a `tar` of the topic. Open, after recovering the
// segments, makes each writer's last line a record, in the order of their
// last writes, with its last write's time as CreateTime, as the close
// would have (a line the close would refuse, keyless on a compacted topic
// or too long, is dropped with a warning), then empties the journal: first
// the journal is rewritten without its conditional entries, so that the
// records appended cannot make a lost entry's condition come true, and
// each record's entry is conditional on it, so a crash during recovery
// recovers each line once. If the rewrite or an append of recovery
// fails (a full disk), the partition is not fenced: the rest of the
// recovery is retried before every append (the mount's lines, produced
// batches, transaction markers), which fails with its error (ENOSPC,
// KAFKA_STORAGE_ERROR) until it succeeds, so that nothing is appended
// before the recovered lines nor past a lost entry's condition. A
// writer's line refused while the disk is too full for the entry that
// clears it is forgotten in memory, and the file repaired from memory
// (emptied, or rewritten) at the writer's next write, its release, the
// journal's next entry or the clean close. Power cuts: the kernel writes back each
// file's pages when it likes (and the writeback kicker pushes the
// segment's every 8 MiB), so the journal on disk may be older than the
// segment: a batch that ended a writer's line is there while the entry
// that cleared the line is not, and the older entry would store the
// line's start a second time. So every entry records the log end it
// implies, and while any writer has a line every append (appendLocked:
// the mount's lines, produced batches, transaction markers) first
// journals a mark recording the end its batch reaches (unless an entry
// already records it, as an AppendLines' conditional entry does for its
// batches; whole-line writers with no line pending write nothing). If
// the recovered log ends past the largest end a valid entry records,
// the journal is behind the log and no line is recovered: a warning
// names the partition and counts the lines and bytes dropped, and the
// journal is emptied. A log ending at or before that end (kill -9, or a
// power cut that lost the segment's newer pages) recovers the lines as
// above. flushLocked and a roll fsync the journal before the segment, so
// a flush keeps the two consistent; the rewrite is not synced. A power
// cut may thus lose unfinished lines (all of the partition's, when the
// journal is behind; at worst the journal is empty or ends in a torn
// entry, which reading stops at), as it loses unflushed records, rather
// than store a line's start twice; but not a line its writer synced. An
// fsync(2) of data while a writer's line is unfinished, through any
// descriptor of the file (the mount syncs every writer's line of the
// partition), and a write through one opened O_SYNC or O_DSYNC (its own
// line only, as O_DSYNC covers the bytes written), journals a synced mark
// for the line, once, and fdatasyncs the journal (LineWriter.Sync); the
// line is synced until an entry sets the writer's line again (extends keep
// it synced). The entry that ends or replaces a synced line is fdatasynced
// before the batch that ends it (and a failed append's undoing of it, and
// a Set), so a synced line whose ending entry is missing after a power cut
// was not ended in the log: recovery keeps the synced lines when the
// journal is behind, and drops only the others. The append that ends a
// synced line flushes the partition, and until that flush succeeded the
// journal keeps the line's entries (neither emptied nor rewritten without
// them), since a power cut may keep the journal's emptying and lose the
// batch. Only
// writers that sync mid-line pay these syncs. A rewrite of a journal that holds or held a
// synced mark fdatasyncs the new file before the rename and the directory
// after it, and the first sync after any rewrite syncs the directory
// first. If the journal has no room for the synced mark, the fsync fails
// with ENOSPC (the records are flushed all the same). A failed fdatasync
// of the journal (the fsync fails with EIO) leaves it to be rewritten
// from memory before any later sync of it succeeds, as a later
// fdatasync of the same file would report success for pages the kernel
// dropped; the rewrite is durable when it holds a synced line, and while
// it cannot be made (a synced line's end not durable in the log yet) the
// retried fsync fails too. A writer opened
// O_SYNC or O_DSYNC (LineWriter.SyncWrites) writes each line's synced
// mark in the same pwrite as the entry that begins the line, so that the
// sync after its write needs no room: on a full disk the write fails
// whole, before its bytes are taken. Offline tools (verify, dump-log)
// and Kafka's loader ignore the file: it has no suffix Kafka uses.
//
// # Cleaners
//
// Retention deletes whole segments, oldest first, by Kafka's rules
// (retention.go): the active one too once it is not empty and past
// retention.ms or retention.bytes, a new empty segment being rolled at the
// log end first when every segment goes, so that the log start moves to
// the log end and the next record keeps its offset (retention.ms=1000 or
// retention.bytes=0 purges a partition). Deleted files are renamed
// .deleted and removed after file.delete.delay.ms or when the last reader
// lets go. DeleteRecords
// (Kafka's API of that name) moves the log start forward, possibly into
// the middle of a segment, and writes the log-start checkpoint before it
// returns; the next retention pass deletes the segments wholly below it,
// whatever the cleanup policy, as Kafka's does (its
// deleteLogStartOffsetBreachedSegments, in the retention check every
// log.retention.check.interval.ms, 5 minutes, as here). Until then no
// read reaches their records (every read starts at the log start), but
// they are on disk, and Size, Status and SegmentFiles count them, as
// Kafka's log.size does. Compaction
// (cleaner.go) rewrites closed segments keeping the latest record of each
// key, and cleans groups of consecutive segments into one, as Kafka's
// cleaner does: a group's logs and indexes fit one segment's limits, so the
// small segments a pass leaves behind merge on the next. It decides
// records and batches by Kafka's rules (KAFKA-FORMAT.md §9.4-9.5): a pass
// whose offset map filled leaves what lies past its end as it was; the
// last data batch of each producer the partition keeps state for stays,
// as an empty batch (no records) if all its records went, so that a load
// without a snapshot still finds the producer's sequence and epoch; a
// COMMIT/ABORT marker whose transaction has no data left gets a delete
// horizon (now + delete.retention.ms) and goes, with its .txnindex entry,
// at the first pass after it, as tombstones do. The cleaner
// writes the new segment whole as the append path would, its .index,
// .timeindex and text map taking each batch as it is written, and seals
// it under .cleaned names (NNN.log.cleaned, NNN.index.cleaned, ...). A
// swap then renames these .swap, the .log last: its rename commits the
// swap. The old segments are renamed .deleted, and the .swap files take
// their final names, the .log last again, so that a reader of the
// directory (segfs verify beside a mount, Kafka after a crash) never finds
// the new .log beside a missing or half-built index; the new segment is
// served as written, without reading it again. The loader drops every
// .cleaned file and every .swap at or above a .cleaned file's base (the
// swap was not committed), and finishes a committed one by deleting every
// segment inside the .log.swap's offsets and renaming each .swap into
// place; an index already renamed before the crash goes with the old
// files and is rebuilt from the log.
//
// # Settings
//
// A topic's settings (Config) are every topic config Kafka's LogConfig
// defines, plus segfs's key.separator; a name Kafka does not define is
// ErrInvalidConfig "unknown key". Values are checked by Kafka's types and
// validators. Some are taken, stored and persisted as overrides but not
// applied (the config file shows them only once set), as they have no meaning here (config_inert.go):
// unclean.leader.election.enable, preallocate, the compression.*.level
// settings, message.format.version, message.downconversion.enable, the
// replication throttles, and the tiered-storage settings
// (remote.storage.enable=true is refused: there is no tiered storage).
// min.insync.replicas is applied by the Kafka server's Produce (acks=all
// above 1 replica fails), not by the mount. So are
// message.timestamp.{before,after}.max.ms, with Kafka 3.x's
// message.timestamp.difference.max.ms as their fallback
// (Config.TimestampBounds): AppendBatch refuses a batch with a CreateTime
// outside them with ErrInvalidTimestamp, listing each record
// (RecordErrors). The mount's lines are stamped with the store's clock, so
// they always pass; no mount path takes a timestamp from its caller.
//
// # Descriptors
//
// The active segment keeps its .log and both indexes open. A closed
// segment keeps only its .log: its indexes are read through their
// mappings, whose files are closed once sealed or opened read-only. The
// journal of unfinished lines stays open from its first entry until the
// partition closes. So a daemon needs about one descriptor per segment
// plus two or three per partition, and RLIMIT_NOFILE (which the cli
// raises at start as far as it may) bounds the number of segments, as in
// Kafka.
//
// # Concurrency
//
// One appender at a time per partition (amu). Readers look at the segment
// list under a short read lock, take a reference on a segment, and then
// read with pread and no lock, never past the committed size that the
// appender publishes after writing. Per-request readers (Read, LookupTime)
// take one segment at a time, the next only when they go on past the
// current one; those that hold a range of the log (text views, the
// cleaner) take every segment of it at once. References keep files of
// deleted segments readable until the last reader releases them.
package logstore
