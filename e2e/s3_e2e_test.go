//go:build e2e

package e2e

// Archives in object storage end to end, against the test cluster's SeaweedFS (a real S3
// server that checks signatures): the archive lands in the bucket, its sha256 is what the
// record says, and once the graph expired its log slices are served from the object by
// range reads. Run with the cluster's environment (see kube_e2e_test.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	"github.com/mcp-harness/mcp-harness/internal/objstore/s3"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// The test reads the bucket itself, through the AWS SDK as the server's helper does.
func init() { objstore.OpenS3 = s3.Open }

// needS3 skips the test unless the test cluster's S3 is there, and returns a bucket URL
// with a prefix of the test's own.
func needS3(t *testing.T) string {
	t.Helper()
	raw := os.Getenv("TESTCLUSTER_S3_URL")
	if raw == "" {
		t.Skip("no test S3: start the test cluster with e2e/cluster/build.sh && e2e/cluster/up.sh, then set -a; . $TESTCLUSTER_RUN/env; set +a")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = fmt.Sprintf("/e2e/%s-%d", t.Name(), time.Now().UnixNano())
	return u.String()
}

func TestS3_Archives(t *testing.T) {
	bucketURL := needS3(t)
	ws := t.TempDir()
	s := startServer(t, ws, "--artifacts-url", bucketURL)
	s.initialize()
	var big strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&big, "line %05d of a long log\n", i)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "small", "command": "echo one; echo two >&2"},
		map[string]any{"id": "big", "command": "cat big.txt"},
		map[string]any{"id": "quiet", "command": "true"},
	}}))["graphId"].(string)
	if st := s.waitGraph(graphID); st["status"] != "succeeded" {
		t.Fatalf("graph = %v", st["status"])
	}
	// Archived as the graph finished: in the bucket, not in the artifacts directory.
	var art map[string]any
	for deadline := time.Now().Add(e2eWait); art == nil; {
		st := structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 0}))
		art, _ = st["artifact"].(map[string]any)
		if art == nil && time.Now().After(deadline) {
			t.Fatal("the graph was not archived")
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	b, err := objstore.Open(t.Context(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path := art["path"].(string)
	key, ok := b.KeyOf(path)
	if !ok || key != b.Key(graphID) || !strings.HasPrefix(path, "s3://artifacts/e2e/") {
		t.Fatalf("artifact path %q, want s3://artifacts/e2e/.../%s.tar.gz", path, graphID)
	}
	if _, err := os.Stat(tasks.ArtifactPath(filepath.Join(ws, ".mcp-harness", "artifacts"), graphID)); err == nil {
		t.Errorf("the archive is also in the local artifacts directory")
	}
	rc, err := b.RangeReader(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != art["sha256"] || n != int64(art["bytes"].(float64)) {
		t.Errorf("the object has %d bytes, sha256 %s; the record says %v bytes, %v", n, got, art["bytes"], art["sha256"])
	}
	t.Logf("archive %s: %d bytes", path, n)

	// Expired (the live logs removed), the slices come from the object.
	s.stdin.Close() // a clean shutdown
	if code := s.waitExit(); code != 0 {
		t.Fatalf("server exit status %d", code)
	}
	s2 := startServer(t, ws, "--artifacts-url", bucketURL, "--retention", "1s")
	s2.initialize()
	var st map[string]any
	for deadline := time.Now().Add(e2eWait); ; {
		st = structuredOf(t, s2.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 0}))
		if st["expired"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the graph did not expire")
		}
		time.Sleep(200 * time.Millisecond) // polling a condition with a deadline
	}
	if _, err := os.Stat(filepath.Join(ws, ".mcp-harness", "logs", graphID)); err == nil {
		t.Error("the expired graph's live logs are still there")
	}
	page := func(task string, offset, limit int) map[string]any {
		res := s2.toolCall("tasks_status", map[string]any{"graphId": graphID, "taskIds": []string{task}, "logOffset": offset, "logLimit": limit})
		return tasksOf(structuredOf(t, res))[task]["log"].(map[string]any)
	}
	if got := page("small", 0, 1000)["text"]; got != "one\ntwo\n" {
		t.Errorf("small's log from the archive = %q", got)
	}
	want := big.String()
	l := page("big", 300000, 1000)
	if got := l["text"].(string); got != want[300000:301000] || l["size"] != float64(len(want)) {
		t.Errorf("big's log from the archive at 300000 = %q (size %v), want %q (size %d)", got, l["size"], want[300000:301000], len(want))
	}
	if !strings.HasPrefix(l["path"].(string), path+"#") {
		t.Errorf("an archived log's path = %v, want it inside %s", l["path"], path)
	}
	tail := tasksOf(structuredOf(t, s2.toolCall("tasks_status", map[string]any{"graphId": graphID, "taskIds": []string{"big"}, "logLines": 2})))["big"]["log"].(map[string]any)
	if got := tail["text"]; got != "line 19998 of a long log\nline 19999 of a long log\n" {
		t.Errorf("big's tail from the archive = %q", got)
	}
	// The operator CLI reads it from the bucket too, by the record.
	out, err := exec.Command(binPath, "tasks", "logs", graphID, "small", "--workspace", ws).Output()
	if err != nil || string(out) != "one\ntwo\n" {
		t.Errorf("tasks logs of the archived log = %q, %v", out, err)
	}
}
