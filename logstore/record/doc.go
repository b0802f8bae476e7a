// Package record encodes and decodes Kafka magic-v2 record batches, the
// unit of every segfs partition log, byte for byte as a Kafka broker writes
// them (KAFKA-FORMAT.md §2).
//
// # Layout
//
// layout.go draws the 61-byte batch header and the varint-encoded records
// and names every offset; header.go parses and checks the header (length,
// magic, CRC-32C); records.go walks the records; codec.go holds the five
// compression codecs.
//
// # Decoding untrusted bytes
//
// Batches come from disk after a crash and from clients over the network,
// so every decoder treats its input as hostile: no input makes it panic,
// slice out of range, or allocate more than the input justifies. Lengths
// are checked against the bytes actually present before they are used, and
// decompression stops at MaxDecompressed (64 MiB). Errors are
// *CorruptError values that say where in the batch the problem is and
// unwrap to ErrShort, ErrCorrupt or ErrCodec.
//
// # Text view
//
// The mount shows a partition as text, one record per line. AppendLines is
// the write side (lines to one uncompressed batch, without allocation per
// record); Decoder.AppendText renders a batch back, and Decoder.Stats gives
// the exact rendered size for any key separator without rendering.
//
// # Concurrency
//
// Package functions are safe for concurrent use. A Decoder or Builder
// reuses its buffers and belongs to one goroutine at a time.
package record
