package archive

import (
	"archive/tar"
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/mcp-harness/mcp-harness/tasks/archive/archivetest"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeLogs writes each named content to a file under dir and returns the logs.
func writeLogs(t *testing.T, dir string, contents map[string][]byte, order ...string) []Log {
	t.Helper()
	var logs []Log
	for _, id := range order {
		path := filepath.Join(dir, id+".log")
		if err := os.WriteFile(path, contents[id], 0o600); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, Log{TaskID: id, Path: path, Size: int64(len(contents[id]))})
	}
	return logs
}

// An artifact of a log that compresses and one that does not reads back byte for byte
// through ReadLogs, OpenLog and the standard library, manifest first; its size and sha256
// are the file's; the level switches (more than one gzip member), unless OneLevel.
func TestWrite_ReadsBack(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 300<<10+7)
	rand.Read(random)
	var text bytes.Buffer
	for i := 0; text.Len() < 400<<10; i++ {
		fmt.Fprintf(&text, "step %d: compiling package p%d ok\n", i, i%97)
	}
	contents := map[string][]byte{"text": text.Bytes(), "random": random, "again": text.Bytes()}
	logs := writeLogs(t, dir, contents, "text", "random", "again")
	manifest := []byte(`{"graph":{}}`)
	req := Request{Final: Path(dir, "g1"), TempName: TempPrefix + "r-0123456789abcdef-g1-", Manifest: manifest,
		MTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Logs: logs}
	w, err := Write(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(req.Final)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if w.Path != req.Final || w.Bytes != int64(len(b)) || w.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Write() = %+v, want the path, size %d and sha256 of the file", w, len(b))
	}

	got := map[string][]byte{}
	err = ReadLogs(req.Final, []string{"again", "random", "text", "none"}, func(id string, size int64, r io.Reader) error {
		data, err := io.ReadAll(r)
		if int64(len(data)) != size {
			t.Errorf("ReadLogs(%s): %d bytes, size %d", id, len(data), size)
		}
		got[id] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range contents {
		if !bytes.Equal(got[id], want) {
			t.Errorf("ReadLogs(%s): %d bytes, want %d the same", id, len(got[id]), len(want))
		}
		rc, size, err := OpenLog(req.Final, id)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || size != int64(len(want)) || !bytes.Equal(data, want) {
			t.Errorf("OpenLog(%s): %d of %d bytes, %v; want %d the same", id, len(data), size, err, len(want))
		}
	}
	if _, ok := got["none"]; ok {
		t.Errorf("ReadLogs reported a log the artifact does not hold")
	}

	zr, err := stdgzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if h.Name == "manifest.json" && !bytes.Equal(data, manifest) {
			t.Errorf("manifest.json = %q, want %q", data, manifest)
		}
		if !h.ModTime.Equal(req.MTime) {
			t.Errorf("%s dated %v, want %v", h.Name, h.ModTime, req.MTime)
		}
		names = append(names, h.Name)
	}
	if want := []string{"manifest.json", LogEntry("text"), LogEntry("random"), LogEntry("again")}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("entries = %q, want %q", names, want)
	}
	if n := archivetest.Members(t, req.Final); n < 3 {
		t.Errorf("%d gzip members, want a new one where the level changes (at least 3)", n)
	}

	req.OneLevel = true
	if _, err := Write(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n := archivetest.Members(t, req.Final); n != 1 {
		t.Errorf("OneLevel: %d gzip members, want 1", n)
	}
}

// A Write whose context has ended leaves nothing behind: no artifact, no temporary file.
func TestWrite_CancelledLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	logs := writeLogs(t, filepath.Join(t.TempDir()), map[string][]byte{"a": bytes.Repeat([]byte("x"), 1<<20)}, "a")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Write(ctx, Request{Final: Path(dir, "g"), TempName: TempPrefix + "r-0123456789abcdef-g-", Logs: logs})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Write(cancelled) = %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a cancelled Write left %v", entries)
	}
}

// A log that is shorter than the size recorded for it is an error, not a short entry.
func TestWrite_LogCutShort(t *testing.T) {
	dir := t.TempDir()
	logs := writeLogs(t, dir, map[string][]byte{"a": []byte("short")}, "a")
	logs[0].Size = 100
	if _, err := Write(t.Context(), Request{Final: Path(dir, "g"), TempName: TempPrefix, Logs: logs}); err == nil {
		t.Errorf("Write() of a log cut short = nil, want an error")
	}
	if _, err := os.Stat(Path(dir, "g")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed Write left the artifact: %v", err)
	}
}

// OpenLog of a task without a log is fs.ErrNotExist.
func TestOpenLog_ErrNotExist(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(t.Context(), Request{Final: Path(dir, "g"), TempName: TempPrefix, Manifest: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenLog(Path(dir, "g"), "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenLog(no log) = %v, want fs.ErrNotExist", err)
	}
}

// RemoveStale removes the temporary artifacts of runners that are not alive, and only
// those.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	names := []string{
		TempPrefix + "r-aaaaaaaaaaaaaaaa-g1-123", // alive
		TempPrefix + "r-bbbbbbbbbbbbbbbb-g2-456", // gone
		TempPrefix + "short",                     // no runner id: left alone
		"g3.tar.gz",                              // an artifact
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	RemoveStale(dir, func(id string) bool { return id == "r-aaaaaaaaaaaaaaaa" })
	for i, n := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if gone := errors.Is(err, fs.ErrNotExist); gone != (i == 1) {
			t.Errorf("%s removed = %v, want %v", n, gone, i == 1)
		}
	}
}

// Written with Index, every log reads back from a range of the archive alone: its
// member, decompressed, past its header.
func TestWrite_Index(t *testing.T) {
	dir := t.TempDir()
	contents := map[string][]byte{
		"a": []byte("first log\n"),
		"b": bytes.Repeat([]byte("line of the second log\n"), 5000),
		"c": {},
		"d": []byte("last, with no newline"),
	}
	logs := writeLogs(t, dir, contents, "a", "b", "c", "d")
	w, err := Write(t.Context(), Request{Final: filepath.Join(dir, "g.tar.gz"), TempName: ".spool-", Manifest: []byte("{}"),
		MTime: time.Unix(0, 0), Logs: logs, Index: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Index) != len(logs) {
		t.Fatalf("Write().Index has %d entries, want %d", len(w.Index), len(logs))
	}
	f, err := os.Open(w.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	end := int64(0)
	for _, ix := range w.Index {
		if ix.Offset < end || ix.Length <= 0 {
			t.Errorf("index of %s = %+v: members must follow each other", ix.TaskID, ix)
		}
		end = ix.Offset + ix.Length
		r, err := OpenIndexed(io.NewSectionReader(f, ix.Offset, ix.Length), ix)
		if err != nil {
			t.Fatalf("OpenIndexed(%s): %v", ix.TaskID, err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("reading %s: %v", ix.TaskID, err)
		}
		if !bytes.Equal(got, contents[ix.TaskID]) {
			t.Errorf("log %s from its range = %d bytes %q..., want %d bytes", ix.TaskID, len(got), shorten(got), len(contents[ix.TaskID]))
		}
	}
	if end != w.Bytes {
		t.Errorf("the members end at %d, the archive at %d", end, w.Bytes)
	}
	// The archive is still one ordinary .tar.gz.
	var seen []string
	if err := ReadLogs(w.Path, []string{"a", "b", "c", "d"}, func(id string, _ int64, r io.Reader) error {
		seen = append(seen, id)
		got, err := io.ReadAll(r)
		if err == nil && !bytes.Equal(got, contents[id]) {
			t.Errorf("ReadLogs %s differs", id)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Errorf("ReadLogs found %v", seen)
	}
}

func shorten(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
