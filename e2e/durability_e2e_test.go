package e2e

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/tasks"
)

func checkIntegrity(t *testing.T, ws string) {
	t.Helper()
	db := openStore(t, ws)
	defer db.Close()
	if res, err := db.IntegrityCheck(t.Context()); err != nil || res != "ok" {
		t.Errorf("PRAGMA integrity_check = %q, %v", res, err)
	}
}

// kill -9 of the server while a task runs, a dependent waits and an independent task waits
// for a slot; the next server records the truth, adopts the rest and leaves nothing running.
func TestE2E_CrashAndRestart(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"maxParallel": 1, "tasks": []any{
		map[string]any{"id": "sleeper", "command": "sleep 1000 & echo $! > grandchild.pid; echo $$ > leader.pid; wait"},
		map[string]any{"id": "dependent", "command": "true", "dependsOn": []string{"sleeper"}},
		map[string]any{"id": "independent", "command": "echo ran after restart"},
	}}))
	graphID := run["graphId"].(string)
	grandchild := readPid(t, filepath.Join(ws, "grandchild.pid"))
	leader := readPid(t, filepath.Join(ws, "leader.pid"))
	s.signal(syscall.SIGKILL)
	s.waitExit()
	waitGone(t, leader) // the parent-death signal
	checkIntegrity(t, ws)

	s2 := startServer(t, ws)
	s2.initialize()
	st := s2.waitGraph(graphID)
	ts := tasksOf(st)
	if ts["sleeper"]["status"] != "failed" || ts["sleeper"]["errorCode"] != "RUNNER_RESTARTED" {
		t.Errorf("sleeper = %v/%v, want failed/RUNNER_RESTARTED", ts["sleeper"]["status"], ts["sleeper"]["errorCode"])
	}
	if ts["dependent"]["status"] != "skipped" || ts["dependent"]["errorCode"] != "UPSTREAM_FAILED" {
		t.Errorf("dependent = %v/%v, want skipped/UPSTREAM_FAILED", ts["dependent"]["status"], ts["dependent"]["errorCode"])
	}
	if ts["independent"]["status"] != "succeeded" {
		t.Errorf("independent = %v, want succeeded (adopted)", ts["independent"]["status"])
	}
	waitGone(t, grandchild)
	s2.stdin.Close()
	s2.waitExit()
	checkIntegrity(t, ws)
}

// A clean shutdown records running tasks RUNNER_SHUTDOWN, leaves no process, and archives
// the graph with a manifest that matches its logs.
func TestE2E_CleanShutdownArchives(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "done", "command": "seq 1 5000"},
		map[string]any{"id": "long", "command": "echo started; echo $$ > pid; exec sleep 1000"},
	}}))
	graphID := run["graphId"].(string)
	pid := readPid(t, filepath.Join(ws, "pid"))
	s.signal(syscall.SIGTERM)
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	waitGone(t, pid)

	db := openStore(t, ws)
	defer db.Close()
	a, err := db.GetArtifact(t.Context(), graphID)
	if err != nil {
		t.Fatalf("no artifact recorded after a clean shutdown: %v", err)
	}
	data, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != a.Bytes || hex.EncodeToString(sum[:]) != a.SHA256 {
		t.Errorf("artifact on disk does not match its record")
	}
	m, logs := readArchive(t, a.Path)
	byID := map[string]tasks.ManifestTask{}
	for _, mt := range m.Tasks {
		byID[mt.ID] = mt
		if mt.Log == nil {
			t.Errorf("task %s has no log in the manifest", mt.ID)
			continue
		}
		b := logs[mt.Log.Name]
		s := sha256.Sum256(b)
		live, _ := os.ReadFile(tasks.LogPath(filepath.Join(ws, workspace.StateDirName, "logs"), graphID, mt.ID))
		if hex.EncodeToString(s[:]) != mt.Log.SHA256 || int64(len(b)) != mt.Log.Bytes || string(live) != string(b) {
			t.Errorf("log %s does not check out against the manifest and the live log", mt.ID)
		}
	}
	if l := byID["long"]; l.Status != "failed" || l.ErrorCode == nil || *l.ErrorCode != "RUNNER_SHUTDOWN" {
		t.Errorf("long in the manifest = %s/%v, want failed/RUNNER_SHUTDOWN", l.Status, l.ErrorCode)
	}
}

func readArchive(t *testing.T, path string) (tasks.Manifest, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var m tasks.Manifest
	logs := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if h.Name == "manifest.json" {
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
		} else {
			logs[h.Name] = b
		}
	}
	return m, logs
}

// With a short --retention a finished graph expires: its live logs go, and tasks_status
// reads them from the artifact and says where it is.
func TestE2E_RetentionExpiry(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws, "--retention", "1s")
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "a", "command": "seq 1 1000"},
	}}))["graphId"].(string)
	s.waitGraph(graphID)
	logDir := filepath.Join(ws, workspace.StateDirName, "logs", graphID)
	deadline := time.Now().Add(e2eWait)
	for {
		if _, err := os.Stat(logDir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("live logs not removed after the retention")
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	st := structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 9}))
	if st["expired"] != true || st["artifact"] == nil {
		t.Fatalf("expired graph status = expired %v artifact %v", st["expired"], st["artifact"])
	}
	if text := tasksOf(st)["a"]["log"].(map[string]any)["text"]; text != "999\n1000\n" {
		t.Errorf("log tail of an expired graph = %q", text)
	}
	list := structuredOf(t, s.toolCall("tasks_list", map[string]any{"graphId": graphID}))
	if g := list["graphs"].([]any)[0].(map[string]any); g["expired"] != true {
		t.Errorf("tasks_list does not mark the graph expired: %v", g)
	}
	// The operator CLI reads an expired graph's logs from the archive too.
	out, err := exec.Command(binPath, "tasks", "logs", graphID, "a", "--workspace", ws).Output()
	if err != nil || len(strings.Split(strings.TrimSpace(string(out)), "\n")) != 1000 {
		t.Errorf("tasks logs of an expired graph: %d bytes, %v", len(out), err)
	}
	out, err = exec.Command(binPath, "tasks", "logs", graphID, "a", "--tail", "2", "--workspace", ws).Output()
	if err != nil || string(out) != "999\n1000\n" {
		t.Errorf("tasks logs --tail 2 of an expired graph = %q, %v", out, err)
	}
}

// kill -9 while a big log is being archived: nothing half-written ever has the final name,
// and the next server archives the graph again.
func TestE2E_InterruptedSpoolIsRedone(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	// Big enough that compressing it takes a while, so the kill lands mid-spool; the race
	// detector slows the server's compression several times over.
	size := 150_000_000
	if raceEnabled {
		size = 20_000_000
	}
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "big", "command": fmt.Sprintf("head -c %d /dev/urandom", size)},
	}}))["graphId"].(string)
	artifacts := filepath.Join(ws, workspace.StateDirName, "artifacts")
	final := tasks.ArtifactPath(artifacts, graphID)
	deadline := time.Now().Add(2 * e2eWait)
	for {
		entries, _ := os.ReadDir(artifacts)
		spooling := false
		for _, e := range entries {
			spooling = spooling || strings.HasPrefix(e.Name(), ".spool-")
		}
		if spooling {
			break
		}
		if _, err := os.Stat(final); err == nil {
			t.Skip("the spool finished before it could be interrupted") // a very fast machine
		}
		if time.Now().After(deadline) {
			t.Fatalf("no spool of graph %s began within %v", graphID, 2*e2eWait)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition with a deadline
	}
	s.signal(syscall.SIGKILL)
	s.waitExit()
	if _, err := os.Stat(final); err == nil {
		t.Fatalf("an artifact exists under its final name although its spool was killed")
	}
	s2 := startServer(t, ws)
	s2.initialize()
	deadline = time.Now().Add(4 * e2eWait)
	st := structuredOf(t, s2.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 0}))
	for st["artifact"] == nil && time.Now().Before(deadline) {
		s2.waitGraph(graphID)
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
		st = structuredOf(t, s2.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 0}))
	}
	if st["artifact"] == nil {
		t.Fatal("the next server did not archive the graph")
	}
	m, logs := readArchive(t, tasks.ArtifactPath(artifacts, graphID))
	sum := sha256.Sum256(logs["logs/big.log"])
	if len(m.Tasks) != 1 || m.Tasks[0].Log == nil || m.Tasks[0].Log.Bytes != int64(size) || hex.EncodeToString(sum[:]) != m.Tasks[0].Log.SHA256 {
		t.Errorf("the redone artifact does not check out")
	}
	entries, _ := os.ReadDir(artifacts)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".spool-") {
			t.Errorf("stale temporary archive left: %s", e.Name())
		}
	}
	checkIntegrity(t, ws)
}

// Two servers on one workspace: graphs submitted to both concurrently all complete, each
// server sees every graph, one cancels the other's task, and the second starting did not
// touch the first's running task.
func TestE2E_TwoServersOneWorkspace(t *testing.T) {
	ws := t.TempDir()
	a, b := startServer(t, ws), startServer(t, ws)
	a.initialize()
	b.initialize()
	long := structuredOf(t, a.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "serve", "command": "echo $$ > serve.pid; exec sleep 1000"},
	}}))["graphId"].(string)
	servePid := readPid(t, filepath.Join(ws, "serve.pid"))

	const perServer = 12
	ids := make([][]string, 2)
	var wg sync.WaitGroup
	for i, s := range []*server{a, b} {
		wg.Go(func() {
			for n := 0; n < perServer; n++ {
				res := s.toolCall("tasks_run", map[string]any{"tasks": []any{
					map[string]any{"id": "x", "command": fmt.Sprintf("echo %d", n)},
					map[string]any{"id": "y", "command": "true", "dependsOn": []string{"x"}},
				}})
				if sc, ok := res["structuredContent"].(map[string]any); ok {
					ids[i] = append(ids[i], sc["graphId"].(string))
				} else {
					t.Errorf("tasks_run: %v", res)
				}
			}
		})
	}
	wg.Wait()
	for i, s := range []*server{a, b} {
		for _, id := range append(ids[0], ids[1]...) { // each sees the other's graphs too
			if st := s.waitGraph(id); st["status"] != "succeeded" {
				t.Errorf("server %d: graph %s = %v", i, id, st["status"])
			}
		}
	}
	if p := structuredOf(t, b.toolCall("tasks_list", map[string]any{"limit": 1000})); len(p["graphs"].([]any)) != 2*perServer+1 {
		t.Errorf("server b lists %d graphs, want %d", len(p["graphs"].([]any)), 2*perServer+1)
	}
	if processGone(servePid) {
		t.Fatalf("the second server touched the first's running task")
	}
	res := structuredOf(t, b.toolCall("tasks_cancel", map[string]any{"graphId": long, "graceMs": 500}))
	if o := res["tasks"].([]any)[0].(map[string]any)["outcome"]; o != "cancelling" && o != "cancelled" {
		t.Errorf("cross-server cancel outcome = %v", o)
	}
	if st := a.waitGraph(long); st["status"] != "cancelled" {
		t.Errorf("cancelled graph = %v", st["status"])
	}
	waitGone(t, servePid)
	for _, s := range []*server{a, b} {
		if strings.Contains(s.stderr.String(), "database is locked") {
			t.Errorf("a server logged database is locked")
		}
	}
}
