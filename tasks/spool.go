package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// Manifest is manifest.json, the first entry of a graph's artifact: the graph as it
// finished, and for each task its state, command and directory, and its log's size and
// sha256, so the archive can be checked. Its parts are the tool results' (model.go).
type Manifest struct {
	Graph struct {
		GraphHead
		RunnerID string `json:"runnerId"`
	} `json:"graph"`
	Tasks []ManifestTask `json:"tasks"`
}

// ManifestTask is one task in a Manifest; Log is null when the task wrote none.
type ManifestTask struct {
	TaskHead
	Command string `json:"command"`
	Cwd     string `json:"cwd"`
	TaskTimes
	RanOn
	Log *ManifestLog `json:"log"`
}

// ManifestLog is a task's log in an artifact.
type ManifestLog struct {
	Name   string `json:"name"` // entry name in the archive
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ArtifactPath is where a graph's artifact goes.
func ArtifactPath(artifactsDir, graphID string) string { return archive.Path(artifactsDir, graphID) }

// levelPerLog off compresses every log at archive.Level: for BenchmarkArchive's
// comparison only.
var levelPerLog = true

// spool writes a finished graph's artifact, <artifacts>/<graphId>.tar.gz holding
// manifest.json and every task's log (package archive), and records it in the store. The
// archive is written under a temporary name, synced and renamed, so a spool cut short
// never leaves anything under the final name; spooling again is harmless (the same content
// is written again).
//
// Archiving is background work beside running tasks, so it is kept cheap and out of their
// way: klauspost/compress's gzip at its fastest level (the same .tar.gz format, several
// times faster than compress/gzip's default), the archive's sha256 taken as it is
// written, and the hashing and compressing done on a thread of their own at the lowest
// CPU priority where the system allows it (lowerThreadPriority). The store is written at
// normal priority: a low-priority thread holding the database's write lock would hold up
// the engine's own writes.
func (e *Engine) spool(ctx context.Context, graphID string) (store.Artifact, error) {
	snap, err := e.Snapshot(ctx, graphID)
	if err != nil {
		return store.Artifact{}, err
	}
	if snap.Graph.FinishedAt == nil {
		return store.Artifact{}, fmt.Errorf("spool %s: the graph has not finished", graphID)
	}
	var r archiveResult
	r.a, r.err = e.archiver.archive(ctx, e, snap)
	if r.err != nil {
		return store.Artifact{}, fmt.Errorf("spool %s: %w", graphID, r.err)
	}
	if err := e.cfg.DB.RecordArtifact(ctx, r.a); err != nil {
		return store.Artifact{}, err
	}
	return r.a, nil
}

// The archiver: one goroutine for the whole process, locked to its thread at the lowest
// priority, that writes the archives of every engine one at a time. A lowered priority
// cannot be raised again without privilege, so the thread must never run anything else:
// the goroutine keeps it locked and ends without unlocking it, so the runtime retires the
// thread. When that happens matters: a task runs with Pdeathsig (taskProcAttr), which
// Linux sends when the thread that forked the task ends, not the process, and the thread
// the archiver locked may have forked tasks before, of any engine in the process (the
// runtime forks on whichever thread the starting goroutine runs on). So the thread lives
// as long as any engine does: every engine holds a use of it from NewEngine to the end of
// its Close, after its own tasks have been reaped, and the thread ends when the last use
// is let go, when no engine is left with a task it could have forked. (Retiring a thread
// per archive killed running tasks; one per engine killed the tasks of another engine in
// the same process, a server and the CLI's, or two in a test.)

type archiveRequest struct {
	ctx  context.Context
	e    *Engine
	snap Snapshot
	done chan archiveResult
}

type archiveResult struct {
	a   store.Artifact
	err error
}

// lowArchiver is the process's archiver.
var lowArchiver archiver

type archiver struct {
	mu    sync.Mutex
	users int                 // engines between NewEngine and the end of their Close
	q     chan archiveRequest // nil until an archive is asked for; closed at the last release
	done  chan struct{}       // closed when the goroutine that reads q ended
	tid   int                 // its thread's id where there is one (threadID), for the tests
}

// acquire notes one more engine that may fork tasks.
func (a *archiver) acquire() {
	a.mu.Lock()
	a.users++
	a.mu.Unlock()
}

// queue returns the archiver's queue, starting the archiver if it is not running. The
// caller holds a use (acquire), so the queue is not closed under it.
func (a *archiver) queue() chan<- archiveRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.q == nil {
		a.q, a.done = make(chan archiveRequest), make(chan struct{})
		started := make(chan struct{})
		go a.loop(a.q, a.done, started)
		<-started // the thread id is known before the first archive
	}
	return a.q
}

func (a *archiver) loop(q <-chan archiveRequest, done, started chan struct{}) {
	defer close(done)
	runtime.LockOSThread() // never unlocked: see above
	lowerThreadPriority()
	a.tid = threadID() // under a.mu, held by queue until started is closed
	close(started)
	for r := range q {
		art, err := r.e.archive(r.ctx, r.snap)
		r.done <- archiveResult{art, err}
	}
}

// release lets go of an engine's use; the last one ends the archiver and its thread and
// waits for it. An engine that comes later starts another.
func (a *archiver) release() {
	a.mu.Lock()
	a.users--
	var q chan archiveRequest
	var done chan struct{}
	if a.users == 0 && a.q != nil {
		q, done = a.q, a.done
		a.q, a.done, a.tid = nil, nil, 0
	}
	a.mu.Unlock()
	if q != nil {
		close(q)
		<-done
	}
}

// archiverUse is an engine's use of the process's archiver, from NewEngine to the end of
// its Close (see above); mu guards closed, set when the use is let go.
type archiverUse struct {
	mu     sync.Mutex
	closed bool
}

// acquireArchiver takes a use of the process's archiver.
func acquireArchiver() *archiverUse {
	lowArchiver.acquire()
	return &archiverUse{}
}

// archive writes the archive of snap on the archiver's thread. After the use was let go
// (a test spooling a closed engine's graphs) it writes it on the caller's thread, at
// normal priority.
func (u *archiverUse) archive(ctx context.Context, e *Engine, snap Snapshot) (store.Artifact, error) {
	done := make(chan archiveResult, 1)
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return e.archive(ctx, snap)
	}
	// Sent under mu: the use, which keeps the queue open, is let go only after closed is
	// set.
	lowArchiver.queue() <- archiveRequest{ctx: ctx, e: e, snap: snap, done: done}
	u.mu.Unlock()
	r := <-done
	return r.a, r.err
}

// Close lets go of the use, at the end of the engine's Close: every task of the engine
// has been reaped.
func (u *archiverUse) Close() {
	u.mu.Lock()
	closed := u.closed
	u.closed = true
	u.mu.Unlock()
	if !closed {
		lowArchiver.release()
	}
}

// archive writes the artifact of the finished graph of snap (see spool).
func (e *Engine) archive(ctx context.Context, snap Snapshot) (store.Artifact, error) {
	artifactsDir, graphID := e.cfg.ArtifactsDir, snap.Graph.ID
	m := Manifest{Tasks: []ManifestTask{}}
	m.Graph.GraphHead, m.Graph.RunnerID = snap.Graph.Head(snap.Progress()), snap.Graph.RunnerID
	var logs []archive.Log
	for _, t := range snap.Tasks {
		mt := ManifestTask{TaskHead: t.Head(), Command: t.Command, Cwd: t.Cwd, TaskTimes: t.Times(*snap.Graph.FinishedAt), RanOn: t.RanOn()}
		path := e.LogPath(graphID, t.ID)
		// The manifest comes first in the archive and holds each log's sha256, so the logs
		// are hashed before they are compressed (from the page cache the second time).
		size, sum, err := archive.HashFile(path)
		if errors.Is(err, fs.ErrNotExist) && t.Attempt > 0 {
			// It started and wrote nothing: a log file is created with the first output
			// (lazyLog), and its log is the empty one.
			size, sum, err = 0, archive.EmptySHA256, nil
		}
		switch {
		case errors.Is(err, fs.ErrNotExist), err == nil && size == 0 && t.Attempt == 0:
			// A task that never started has no log, even if an empty file was left for it
			// (earlier builds created logs ahead of the starts, which may not come).
		case err != nil:
			return store.Artifact{}, err
		default:
			mt.Log = &ManifestLog{Name: archive.LogEntry(t.ID), Bytes: size, SHA256: sum}
			logs = append(logs, archive.Log{TaskID: t.ID, Path: path, Size: size})
		}
		m.Tasks = append(m.Tasks, mt)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return store.Artifact{}, err
	}
	w, err := archive.Write(ctx, archive.Request{
		Final:    ArtifactPath(artifactsDir, graphID),
		TempName: archive.TempPrefix + e.RunnerID() + "-" + graphID + "-",
		Manifest: manifest,
		MTime:    *snap.Graph.FinishedAt,
		Logs:     logs,
		OneLevel: !levelPerLog,
		Index:    e.cfg.Artifacts != nil,
	})
	if err != nil {
		return store.Artifact{}, err
	}
	if e.cfg.Artifacts != nil {
		a, err := e.upload(ctx, graphID, w)
		a.CreatedAt = time.Now().UTC()
		return a, err
	}
	return store.Artifact{GraphID: graphID, Path: w.Path, Bytes: w.Bytes, SHA256: w.SHA256, CreatedAt: time.Now().UTC()}, nil
}

// OpenArtifactLog opens a task's log inside an artifact for reading from its start, and
// says how long it is. It returns fs.ErrNotExist when the task has no log there.
func OpenArtifactLog(artifact, taskID string) (io.ReadCloser, int64, error) {
	return archive.OpenLog(artifact, taskID)
}
