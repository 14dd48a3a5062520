package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// The archive's compression is chosen per log. klauspost's LZ levels (every one of them,
// 1 to 9) give up on high-entropy text such as base64 of random bytes and store it as it
// is (ratio 1.000, where gzip -1 gets 0.78), while its Huffman-only mode codes the same
// text to 0.76 at about 2.5 ms/MB; on ordinary logs level 1 is far better (0.22 on
// BenchmarkArchive's log-like text), as Huffman-only never goes below the text's
// per-byte entropy. A log is usually one kind of text from its start (a task writes one sort of
// output), and tasks differ, so the choice is made per log from its first bytes: they
// are compressed at Level into a counter, and a log that does not shrink
// meaningfully is compressed with Huffman-only instead.
//
// The gzip stream is then several members (RFC 1952 allows it; Go's gzip readers, the
// stdlib's and klauspost's, read members on by default, and so do GNU gzip and tar), one
// new member where the level changes, started right after the tar header of the log that
// needs it. The manifest is always at Level; a header (and the previous log's
// padding) goes in whichever member is open, a few dozen bytes either way. Logs in a row
// that take the same level share one member.
const (
	// sampleBytes is how much of a log's start decides its level: several of the
	// compressor's blocks (64 KiB at level 1), so one odd block does not decide it, and
	// small enough that the extra compression costs a couple of milliseconds per log. It
	// is read once: the same bytes are then written to the archive.
	sampleBytes = 256 << 10
	// incompressible: a sample whose compressed size is above this fraction of it is
	// taken for high-entropy text. klauspost stores such text (1.00); Huffman-only gains
	// something as soon as the text uses fewer than ~7.5 bits a byte, and any log level 1
	// helps with at all comes out well under it.
	incompressible = 0.95
)

// memberWriter is the archive's gzip stream: one gzip.Writer at a time, a new member
// whenever the level changes.
type memberWriter struct {
	w       io.Writer // the archive file (and its sha256)
	gz      *gzip.Writer
	level   int
	byLvl   map[int]*gzip.Writer // reused across members
	sample  *flate.Writer        // compresses samples into sampled
	sampled countingWriter
	buf     []byte // a log's first bytes
	// oneLevel compresses every log at Level (Request.OneLevel).
	oneLevel bool
	// in counts the uncompressed bytes written so far (for Request.Index).
	in int64
}

func newMemberWriter(w io.Writer, oneLevel bool) (*memberWriter, error) {
	gz, err := gzip.NewWriterLevel(w, Level)
	if err != nil {
		return nil, err
	}
	return &memberWriter{w: w, gz: gz, level: Level, byLvl: map[int]*gzip.Writer{Level: gz}, oneLevel: oneLevel}, nil
}

func (m *memberWriter) Write(p []byte) (int, error) {
	n, err := m.gz.Write(p)
	m.in += int64(n)
	return n, err
}

// use makes what is written next go at level: it ends the current member and starts a
// new one if the level differs, or if fresh says so (a log indexed on its own).
func (m *memberWriter) use(level int, fresh bool) error {
	if level == m.level && !fresh {
		return nil
	}
	if err := m.gz.Close(); err != nil { // the member's trailer; m.w stays open
		return err
	}
	gz, ok := m.byLvl[level]
	if !ok {
		var err error
		if gz, err = gzip.NewWriterLevel(m.w, level); err != nil {
			return err
		}
		m.byLvl[level] = gz
	} else {
		gz.Reset(m.w)
	}
	m.gz, m.level = gz, level
	return nil
}

func (m *memberWriter) Close() error { return m.gz.Close() }

// levelFor says which level suits a log that starts with sample.
func (m *memberWriter) levelFor(sample []byte) (int, error) {
	if len(sample) == 0 || m.oneLevel {
		return Level, nil
	}
	m.sampled.n = 0
	if m.sample == nil {
		var err error
		m.sampled.w = io.Discard
		if m.sample, err = flate.NewWriter(&m.sampled, Level); err != nil {
			return 0, err
		}
	} else {
		m.sample.Reset(&m.sampled)
	}
	if _, err := m.sample.Write(sample); err != nil {
		return 0, err
	}
	if err := m.sample.Close(); err != nil {
		return 0, err
	}
	if float64(m.sampled.n) > incompressible*float64(len(sample)) {
		return gzip.HuffmanOnly, nil
	}
	return Level, nil
}

// copyLog adds a log to the archive as the size the manifest recorded (a log that grew
// since, which a task's leftover cannot do but be safe, is cut at that size), at the
// level its start calls for. With at (Request.Index) the log starts a member of its own,
// before its header, and at records where: out counts the archive's bytes.
func copyLog(ctx context.Context, tw *tar.Writer, mw *memberWriter, name, path string, size int64, mtime time.Time, out *countingWriter, at *LogIndex) error {
	var src io.Reader = strings.NewReader("")
	switch f, err := os.Open(path); {
	case err == nil:
		defer f.Close()
		src = f
	case size == 0 && errors.Is(err, fs.ErrNotExist): // a log never created (Log.Path)
	default:
		return err
	}
	r := ctxReader{ctx, io.LimitReader(src, size)}
	if mw.buf == nil {
		mw.buf = make([]byte, sampleBytes)
	}
	n, err := io.ReadFull(r, mw.buf[:min(size, sampleBytes)])
	if err != nil && err != io.ErrUnexpectedEOF { // a log cut short is reported below
		return err
	}
	sample := mw.buf[:n]
	level, err := mw.levelFor(sample)
	if err != nil {
		return err
	}
	if at != nil {
		// A member of its own, started before the header: it holds the previous entry's
		// padding, the header, then the content (Skip is the first two).
		if err := mw.use(level, true); err != nil {
			return err
		}
		at.Offset = out.n
		start := mw.in
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		at.Skip = mw.in - start
	} else {
		// The header goes first, in the current member: tar.Writer writes the previous
		// entry's padding and this header straight through on WriteHeader, so everything
		// after it is this log's content.
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if err := mw.use(level, false); err != nil {
			return err
		}
	}
	if _, err := tw.Write(sample); err != nil {
		return err
	}
	c, err := io.Copy(tw, r)
	if err == nil && int64(n)+c != size {
		err = fmt.Errorf("%s: read %d bytes, want %d", name, int64(n)+c, size)
	}
	return err
}
