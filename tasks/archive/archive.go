// Package archive is the format of a finished graph's artifact, <graphId>.tar.gz: a tar
// of manifest.json and one logs/<taskId>.log entry per task that wrote a log, gzip
// compressed in members whose level is chosen per log (see gzip.go). It writes an
// artifact atomically (a temporary name, synced, renamed) and reads logs back out of one.
//
// It knows files and bytes only: what the manifest says, which tasks have logs and where
// an artifact is recorded are the engine's (package tasks), which hands Write the
// manifest already encoded and the logs by path.
package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Level is the artifacts' gzip level: the fastest. Logs compress well even so, and an
// artifact is written once and rarely read. A log that this level cannot shrink is
// compressed with Huffman coding only (gzip.go).
const Level = gzip.BestSpeed

// TempPrefix starts the name of an artifact being written. The engine puts its runner id
// right after it, so that a later runner can tell which leftovers belong to a runner that
// is gone (RemoveStale).
const TempPrefix = ".spool-"

// Path is where a graph's artifact goes in the artifacts directory dir.
func Path(dir, graphID string) string {
	return filepath.Join(dir, graphID+".tar.gz")
}

// LogEntry is a task's log's name inside an artifact.
func LogEntry(taskID string) string { return "logs/" + taskID + ".log" }

// Log is one task's log to put in an artifact: Size bytes of the file at Path, written
// as entry LogEntry(TaskID). Size is what the manifest recorded: a log that grew since
// is cut at it.
type Log struct {
	TaskID string
	Path   string // need not exist when Size is 0: a log never created is an empty one
	Size   int64
}

// EmptySHA256 is the hex sha256 of an empty log, which HashFile gives an empty file.
var EmptySHA256 = func() string { h := sha256.Sum256(nil); return hex.EncodeToString(h[:]) }()

// Request is what Write writes: Manifest (manifest.json, the first entry), then Logs in
// order, every entry dated MTime, as Final, by way of a temporary file in Final's
// directory named TempName plus a random suffix.
type Request struct {
	Final    string
	TempName string
	Manifest []byte
	MTime    time.Time
	Logs     []Log
	// OneLevel compresses every log at Level rather than at the level its start calls
	// for: for benchmarks that compare the two.
	OneLevel bool
	// Index starts every log in a gzip member of its own and reports where (Written.Index),
	// so that one log can be read by a range read of its member alone (an artifact in
	// object storage). It costs a member header and a compressor reset per log.
	Index bool
}

// LogIndex is where a log is in an artifact written with Request.Index: its gzip member
// starts at byte Offset and is Length bytes long (with what follows it in that member:
// the next entry's padding, or the archive's end); decompressed, the member's first Skip
// bytes come before the log's content (the previous entry's padding and the log's tar
// header), and the content is Size bytes.
type LogIndex struct {
	TaskID string `json:"taskId"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Skip   int64  `json:"skip"`
	Size   int64  `json:"size"`
}

// Written is what Write wrote: the artifact's path, size and sha256 (hex), and, with
// Request.Index, where each log is in it.
type Written struct {
	Path   string
	Bytes  int64
	SHA256 string
	Index  []LogIndex
}

// Write writes the artifact r describes. It is written under a temporary name, synced and
// renamed, so a Write cut short (ctx ended, a crash) never leaves anything under the
// final name; writing again is harmless. The sha256 is taken as the archive is written.
func Write(ctx context.Context, r Request) (Written, error) {
	dir := filepath.Dir(r.Final)
	tmp, err := os.CreateTemp(dir, r.TempName+"*")
	if err != nil {
		return Written{}, err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	sum := sha256.New()
	counter := &countingWriter{w: io.MultiWriter(tmp, sum)}
	index, err := writeTar(ctx, counter, r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), r.Final)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return Written{}, err
	}
	for i := range index {
		end := counter.n
		if i+1 < len(index) {
			end = index[i+1].Offset
		}
		index[i].Length = end - index[i].Offset
	}
	return Written{Path: r.Final, Bytes: counter.n, SHA256: hex.EncodeToString(sum.Sum(nil)), Index: index}, nil
}

// writeTar writes the compressed tar of r to w, which counts what it is given, and with
// r.Index returns where each log went (Length is left to the caller: the next member's
// start, or the end).
func writeTar(ctx context.Context, w *countingWriter, r Request) ([]LogIndex, error) {
	gz, err := newMemberWriter(w, r.OneLevel) // gzip.go: the level is chosen per log
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	if err := WriteEntry(tw, "manifest.json", int64(len(r.Manifest)), r.MTime, strings.NewReader(string(r.Manifest))); err != nil {
		return nil, err
	}
	var index []LogIndex
	for _, l := range r.Logs {
		var at *LogIndex
		if r.Index {
			index = append(index, LogIndex{TaskID: l.TaskID, Size: l.Size})
			at = &index[len(index)-1]
		}
		if err := copyLog(ctx, tw, gz, LogEntry(l.TaskID), l.Path, l.Size, r.MTime, w, at); err != nil {
			return nil, err
		}
	}
	return index, errors.Join(tw.Close(), gz.Close())
}

// WriteEntry writes one regular file of exactly size bytes read from r to tw.
func WriteEntry(tw *tar.Writer, name string, size int64, mtime time.Time, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: read %d bytes, want %d", name, n, size)
	}
	return err
}

// HashFile returns the size and sha256 (hex) of the file at path.
func HashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// RemoveStale deletes the temporary artifacts in dir left by runners that are no longer
// alive (a Write cut short by a crash): they were never renamed, so nothing refers to
// them. A temporary name holds its runner's id right after TempPrefix.
func RemoveStale(dir string, alive func(runnerID string) bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		if !strings.HasPrefix(name, TempPrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, TempPrefix)
		// Runner ids are "r-" and 16 characters.
		if len(rest) < 18 || alive(rest[:18]) {
			continue
		}
		os.Remove(filepath.Join(dir, name))
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ctxReader stops a long copy when its context ends (a shutdown must not wait for a
// gigabyte log to be compressed; the next runner spools it again).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
