package record

// This file owns the byte layout of a magic-v2 record batch and of the
// records inside it (KAFKA-FORMAT.md §2.1, §2.3, §2.5). Every other file of
// the package reads and writes the header through these constants.
//
// Batch header, 61 bytes, all integers big-endian:
//
//	 0                   8           12          16 17          21    23          27
//	+-------------------+-----------+-----------+--+-----------+-----+-----------+
//	| BaseOffset int64  | BatchLen  | LeaderEp  |Mg| CRC uint32| Attr| LastOffΔ  |
//	+-------------------+-----------+-----------+--+-----------+-----+-----------+
//	27                  35                  43                  51    53          57          61
//	+-------------------+-------------------+-------------------+-----+-----------+-----------+
//	| BaseTimestamp     | MaxTimestamp      | ProducerID int64  | PEp | BaseSeq   | Count     |
//	+-------------------+-------------------+-------------------+-----+-----------+-----------+
//	61 ... end: Count records, or one compressed stream holding them.
//
// BatchLen counts the bytes after itself, so a batch is LogOverhead +
// BatchLen bytes long. The CRC-32C covers bytes [21, end): the fields before
// it (offset, length, epoch, magic) are left out so a leader can stamp
// offsets and epochs without recomputing it.
//
// Attributes (only the low byte is used):
//
//	bit 0-2  codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
//	bit 3    timestamp type: 1 = LogAppendTime (MaxTimestamp is every record's)
//	bit 4    transactional
//	bit 5    control batch
//	bit 6    delete horizon: BaseTimestamp holds it (set by compaction)
//
// Record, variable length (varint = zig-zag 32-bit, ≤5 bytes; varlong =
// zig-zag 64-bit, ≤10 bytes; lengths of -1 mean null):
//
//	Length         varint   bytes of the record after this field
//	Attributes     int8     unused, 0
//	TimestampDelta varlong  timestamp - BaseTimestamp
//	OffsetDelta    varint   offset - BaseOffset
//	KeyLength      varint   -1 = null
//	Key            bytes
//	ValueLength    varint   -1 = null (tombstone)
//	Value          bytes
//	HeaderCount    varint   ≥ 0
//	Headers        HeaderCount × { KeyLength varint ≥ 0, Key, ValueLength varint (-1 = null), Value }
//
// Example, offset delta 0, timestamp delta 0, key "k", value "v":
//
//	10 00 00 00 02 6B 02 76 00

// Header field offsets and widths inside a batch.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
	offRecords         = 61

	// crcStart is the first byte covered by the CRC.
	crcStart = offAttributes
	// peekSize is how many bytes PeekSize needs: enough to see the magic.
	peekSize = offMagic + 1
	// minBatchLength is the smallest legal BatchLength: a header without
	// records.
	minBatchLength = HeaderSize - LogOverhead
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// Record layout limits.
const (
	// minRecordSize is the smallest encoded record: a one-byte length and
	// six one-byte fields (attributes, timestamp delta, offset delta, key
	// length, value length, header count). It bounds how many records a
	// stream of a given size can hold.
	minRecordSize = 7
	// maxVarintLen32 and maxVarintLen64 are the longest legal varint and
	// varlong encodings.
	maxVarintLen32 = 5
	maxVarintLen64 = 10
	// maxRecordOverhead is the most bytes a record of AppendLines spends
	// beyond its key and value bytes: length, attributes, timestamp delta
	// (always 0 there), offset delta, key length, value length, header
	// count.
	maxRecordOverhead = maxVarintLen32 + 1 + 1 + maxVarintLen32 + maxVarintLen32 + maxVarintLen32 + 1
)

// MaxRecordOverhead is the most bytes a record of AppendLines spends beyond
// its key and value bytes (23): a line of n bytes is a batch of at most
// HeaderSize + n + MaxRecordOverhead bytes.
const MaxRecordOverhead = maxRecordOverhead
