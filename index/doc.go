// Package index implements Kafka's sparse offset index (.index) and time
// index (.timeindex): the byte formats, preallocation, memory mapping,
// lookup, truncation and sanity checks described in KAFKA-FORMAT.md §3 and
// §4.
//
// # Layout
//
// Both files are bare arrays of fixed-size big-endian entries with no
// header and no checksum. offset_format.go owns the 8-byte .index entry and
// time_format.go the 12-byte .timeindex entry; everything else goes through
// their accessors. The pure functions ParseOffsetEntries and
// ParseTimeEntries decode raw bytes for dump-log without touching a file.
//
// # Entry count and preallocation
//
// As in Kafka, the number of entries in an existing file is its length
// divided by the entry size; there is no "used" marker. A writable open
// then extends the file (sparse) to the configured maximum so appends can
// go on, and Trim cuts it back to the used entries on roll and close. An
// index that was never trimmed (a crash) therefore reopens with every slot
// counted, zeros included; SanityCheck reports that, and the log store
// rebuilds the index from its log.
//
// # Concurrency
//
// Each index is safe for one writer (Append/MaybeAppend, TruncateTo,
// Reset, Trim, Resize, Close) and any number of concurrent readers (Lookup,
// Entry, Last, SanityCheck). The writer stores the entry bytes before it
// publishes the new entry count atomically, so a reader always sees a
// consistent prefix. A read/write mutex guards the mapping itself: readers
// hold it shared for the few hundred nanoseconds of a lookup, and only
// operations that unmap, remap or overwrite published entries take it
// exclusively, so no reader can touch an unmapped page.
//
// # Durability
//
// Indexes are derived data. Appends reach the page cache through a shared
// mapping; Flush makes them durable with msync and fsync. The log store
// checks indexes on open (SanityCheck, CheckPositions, CheckOffsets) and
// rebuilds them from the log when they disagree, so nothing here tries to
// repair a damaged file, and no file content, however broken, makes this
// package panic.
package index
