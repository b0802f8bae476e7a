package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is the compression codec in attribute bits 0-2.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// MaxDecompressed bounds the records region of one batch after
// decompression. Kafka caps a batch at message.max.bytes (1 MiB by default)
// after compression, and real record data rarely compresses better than
// 10:1, so 64 MiB admits every batch a sane producer writes while keeping a
// decompression bomb from taking more than that much memory per Decoder.
const MaxDecompressed = 64 << 20

// keepBuffer is the largest decompression buffer a Decoder keeps between
// calls; a rare huge batch should not pin its memory for the Decoder's life.
const keepBuffer = 16 << 20

// xerialMagic opens a snappy-java (SnappyOutputStream) stream. It is
// followed by a big-endian int32 version and int32 compatible version, then
// by blocks of a big-endian int32 length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16       // magic, version, compatible version
	xerialBlockSize  = 32 << 10 // the block size snappy-java writes
)

// String returns Kafka's name: none, gzip, snappy, lz4, zstd.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// ParseCodec maps Kafka's names (none/uncompressed, gzip, snappy, lz4, zstd) to a Codec.
func ParseCodec(name string) (Codec, error) {
	switch strings.ToLower(name) {
	case "none", "uncompressed":
		return CodecNone, nil
	case "gzip":
		return CodecGzip, nil
	case "snappy":
		return CodecSnappy, nil
	case "lz4":
		return CodecLZ4, nil
	case "zstd":
		return CodecZstd, nil
	}
	return 0, fmt.Errorf("%w %q", ErrCodec, name)
}

// zstdDecoder is shared by every Decoder: DecodeAll is safe for concurrent
// use and a zstd decoder is too large to keep one per Decoder. Its memory
// bound makes it refuse a frame that declares, or grows to, more than
// MaxDecompressed bytes before allocating for it.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxDecompressed),
	)
})

// zstdEncoder is shared by every Builder for the same reason.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
})

// ErrTooBig is the reason given for a batch whose records exceed
// MaxDecompressed once decompressed (a decompression bomb, or a valid but
// extreme batch). The *CorruptError that carries it still unwraps to
// ErrCorrupt as well, so readers treat it as before; a producer-facing
// caller can tell it apart and answer "too large" rather than "corrupt".
var ErrTooBig = fmt.Errorf("record: decompressed records exceed %d bytes", MaxDecompressed)

// decompress returns the records region of a batch with codec c, decoded
// into d.buf. Errors are *CorruptError positioned at the records region.
func (d *Decoder) decompress(c Codec, src []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch c {
	case CodecNone:
		return src, nil
	case CodecGzip:
		d.br.Reset(src)
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.br)
		} else {
			err = d.gz.Reset(&d.br)
		}
		if err == nil {
			out, err = readBounded(d.buf[:0], d.gz)
		}
	case CodecSnappy:
		out, err = decodeSnappy(d.buf[:0], src)
	case CodecLZ4:
		d.br.Reset(src)
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.br)
		} else {
			d.lz.Reset(&d.br)
		}
		out, err = readBounded(d.buf[:0], d.lz)
	case CodecZstd:
		var zd *zstd.Decoder
		if zd, err = zstdDecoder(); err == nil {
			out, err = zd.DecodeAll(src, d.buf[:0])
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
				err = ErrTooBig
			}
		}
	default:
		return nil, errorf(ErrCodec, offAttributes, "compression codec %d", int8(c))
	}
	// Keep whatever buffer the codec grew, so the next batch reuses it.
	if cap(out) > cap(d.buf) && cap(out) <= keepBuffer {
		d.buf = out[:0]
	}
	if err != nil {
		e := errorf(ErrCorrupt, offRecords, "%v records: %v", c, err).(*CorruptError)
		if errors.Is(err, ErrTooBig) {
			e.Cause = ErrTooBig
		}
		return nil, e
	}
	return out, nil
}

// release drops a decompression buffer too large to keep.
func (d *Decoder) release() {
	if cap(d.buf) > keepBuffer {
		d.buf = nil
	}
}

// readBounded reads r to EOF, appending to dst, and fails once more than
// MaxDecompressed bytes come out. The buffer grows by doubling, so a small
// stream that claims to be huge never causes a large allocation.
func readBounded(dst []byte, r io.Reader) ([]byte, error) {
	stalls := 0
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(max(cap(dst), 64<<10), MaxDecompressed+1-len(dst)))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > MaxDecompressed {
			return dst, ErrTooBig
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		if n == 0 {
			if stalls++; stalls > 100 {
				return dst, io.ErrNoProgress
			}
		}
	}
}

// decodeSnappy decodes Kafka's snappy: the xerial snappy-java stream the
// Java client and broker write, or a single raw snappy block, which
// librdkafka and franz-go may send and snappy-java also reads.
func decodeSnappy(dst, src []byte) ([]byte, error) {
	if len(src) < xerialHeaderSize || !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src)
	}
	src = src[xerialHeaderSize:]
	// Sum the claimed decoded sizes first, so that dst grows once and a
	// bomb is refused before anything is allocated.
	total := 0
	for rem := src; len(rem) > 0; {
		if len(rem) < 4 {
			return dst, errors.New("xerial: truncated block length")
		}
		n := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(n) > uint64(len(rem)) {
			return dst, fmt.Errorf("xerial: block of %d bytes, %d left", n, len(rem))
		}
		l, err := snappy.DecodedLen(rem[:n])
		if err != nil {
			return dst, err
		}
		if total += l; total > MaxDecompressed {
			return dst, ErrTooBig
		}
		rem = rem[n:]
	}
	dst = slices.Grow(dst, total)
	for len(src) > 0 {
		n := binary.BigEndian.Uint32(src)
		var err error
		if dst, err = snappyBlock(dst, src[4:4+n]); err != nil {
			return dst, err
		}
		src = src[4+n:]
	}
	return dst, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst.
func snappyBlock(dst, block []byte) ([]byte, error) {
	l, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, err
	}
	if l > MaxDecompressed-len(dst) {
		return dst, ErrTooBig
	}
	dst = slices.Grow(dst, l)
	out, err := snappy.Decode(dst[len(dst):cap(dst)], block)
	if err != nil {
		return dst, err
	}
	if len(out) != l {
		return dst, errors.New("snappy: decoded length mismatch")
	}
	return dst[:len(dst)+l], nil
}

// compressor holds the reusable encoders of a Builder.
type compressor struct {
	w  appendWriter
	gz *gzip.Writer
	lz *lz4.Writer
}

// appendWriter is an io.Writer that appends to a slice, so streaming
// encoders can write straight into the batch being built.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// compress appends src compressed with c to dst, in the framing the Java
// client writes (KAFKA-FORMAT.md §2.6).
func (z *compressor) compress(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		z.w.b = dst
		if z.gz == nil {
			z.gz = gzip.NewWriter(&z.w)
		} else {
			z.gz.Reset(&z.w)
		}
		if _, err := z.gz.Write(src); err != nil {
			return dst, err
		}
		err := z.gz.Close()
		dst, z.w.b = z.w.b, nil
		return dst, err
	case CodecSnappy:
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // compatible version
		for len(src) > 0 {
			n := min(len(src), xerialBlockSize)
			dst = slices.Grow(dst, 4+snappy.MaxEncodedLen(n))
			at := len(dst)
			block := snappy.Encode(dst[at+4:cap(dst)], src[:n])
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
			dst = dst[:at+4+len(block)]
			src = src[n:]
		}
		return dst, nil
	case CodecLZ4:
		z.w.b = dst
		if z.lz == nil {
			z.lz = lz4.NewWriter(&z.w)
			// Kafka's KafkaLZ4BlockOutputStream: 64 KiB independent blocks,
			// no checksums.
			if err := z.lz.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
				return dst, err
			}
		} else {
			z.lz.Reset(&z.w)
		}
		if _, err := z.lz.Write(src); err != nil {
			return dst, err
		}
		err := z.lz.Close()
		dst, z.w.b = z.w.b, nil
		return dst, err
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return dst, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w %d", ErrCodec, int8(c))
}
