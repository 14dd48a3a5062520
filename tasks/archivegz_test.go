package tasks

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/tasks/archive"
	"github.com/mcp-harness/mcp-harness/tasks/archive/archivetest"
)

// randomBase64 returns n bytes of base64 of random bytes in 76-column lines, the text
// klauspost's LZ levels store as it is.
func randomBase64(n int) []byte {
	raw := make([]byte, n)
	rand.Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw)
	var b bytes.Buffer
	for len(enc) > 0 && b.Len() < n {
		k := min(76, len(enc))
		b.WriteString(enc[:k])
		b.WriteByte('\n')
		enc = enc[k:]
	}
	return b.Bytes()[:n]
}

// An archive holding a log that compresses and one that does not (high-entropy text, for
// which the archive switches compression) reads back byte for byte through the engine's
// readers and through the system's tar, and the incompressible log's archive is smaller
// than the log.
func TestSpool_IncompressibleLogShrinksAndReadsBack(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.ArtifactsDir = c.Workspace.ArtifactsDir })
	dir := t.TempDir()
	rnd := randomBase64(3<<20 + 123) // not a multiple of tar's 512-byte blocks
	var text bytes.Buffer
	for i := 0; text.Len() < 2<<20; i++ {
		fmt.Fprintf(&text, "step %d: compiling package p%d ok\n", i, i%97)
	}
	for name, b := range map[string][]byte{"rand.txt": rnd, "text.txt": text.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cat := func(name string) string { return "cat '" + filepath.Join(dir, name) + "'" }

	// Both kinds in one archive, in both orders around a log that compresses, so the
	// stream switches level and back.
	mixed := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", cat("text.txt")), tsk("b", cat("rand.txt")), tsk("c", cat("text.txt")), tsk("d", "true")}})
	te.waitDone(t, mixed.Graph.ID)
	a, err := te.e.spool(t.Context(), mixed.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"a": text.Bytes(), "b": rnd, "c": text.Bytes(), "d": {}}
	checkArchiveReadsBack(t, a.Path, a.SHA256, want)
	// Not what a user sees, but what makes the reads above mean something: the archive is
	// several gzip members.
	if n := archivetest.Members(t, a.Path); n < 3 {
		t.Errorf("archive has %d gzip members, want at least 3 (a level switch and back)", n)
	}

	// The incompressible log alone: the archive is well under the log's size (before,
	// it was the log's size and more).
	alone := te.submit(t, Spec{Tasks: []TaskSpec{tsk("b", cat("rand.txt"))}})
	te.waitDone(t, alone.Graph.ID)
	a, err = te.e.spool(t.Context(), alone.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkArchiveReadsBack(t, a.Path, a.SHA256, map[string][]byte{"b": rnd})
	if ratio := float64(a.Bytes) / float64(len(rnd)); ratio > 0.8 {
		t.Errorf("archive of a %d-byte base64 log is %d bytes (%.3f of it), want at most 0.8", len(rnd), a.Bytes, ratio)
	}
}

// checkArchiveReadsBack reads every log of want from the archive at path through each of
// the engine's readers and through tar -xzf, and checks the archive's and the manifest's
// sha256.
func checkArchiveReadsBack(t *testing.T, path, sum string, want map[string][]byte) {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256(file); hex.EncodeToString(h[:]) != sum {
		t.Errorf("archive sha256 %x, recorded %s", h, sum)
	}
	m, logs := readArtifact(t, path) // compress/gzip
	checkManifest(t, m, logs)
	ids := make([]string, 0, len(want))
	for id, b := range want {
		ids = append(ids, id)
		if !bytes.Equal(logs[archive.LogEntry(id)], b) {
			t.Errorf("%s through compress/gzip: %d bytes, want %d", id, len(logs[archive.LogEntry(id)]), len(b))
		}
		rc, size, err := OpenArtifactLog(path, id) // tasks_logs follow, the CLI
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || size != int64(len(b)) || !bytes.Equal(got, b) {
			t.Errorf("%s through OpenArtifactLog: %d of %d bytes, %v; want %d the same", id, len(got), size, err, len(b))
		}
		s, err := readArtifactLog(path, id, -1000, 1000)
		if err != nil || s.Text != refTail(string(b), -1, 1000) || !s.EOF {
			t.Errorf("%s tail through readArtifactLog = %d bytes, %v", id, len(s.Text), err)
		}
	}
	// tasks_status of an archived graph: a byte tail and a lines tail.
	three := 3
	for _, q := range []LogQuery{{Tail: 700}, {Tail: MaxLogTail, Lines: &three}} {
		slices, err := readArtifactLogs(path, ids, q)
		if err != nil {
			t.Fatal(err)
		}
		for id, b := range want {
			tail := refTail(string(b), q.tailLines(), int(q.Tail))
			if s := slices[id]; s.Text != tail || s.Size != int64(len(b)) || s.SkippedBytes == nil || *s.SkippedBytes != int64(len(b)-len(tail)) {
				t.Errorf("%s through readArtifactLogs(%d lines, %d bytes): %d of %d bytes, want the last %d of %d", id, q.tailLines(), q.Tail, len(s.Text), s.Size, len(tail), len(b))
			}
		}
	}

	if _, err := exec.LookPath("tar"); err != nil {
		t.Log("tar is not installed: not read with it")
		return
	}
	out := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", path, "-C", out).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf: %v: %s", err, b)
	}
	for id, b := range want {
		got, err := os.ReadFile(filepath.Join(out, archive.LogEntry(id)))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s through tar -xzf: %d bytes, %v; want %d the same", id, len(got), err, len(b))
		}
	}
	if got, err := os.ReadFile(filepath.Join(out, "manifest.json")); err != nil || !strings.Contains(string(got), `"sha256"`) {
		t.Errorf("manifest.json through tar -xzf: %v", err)
	}
}
