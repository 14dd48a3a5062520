package tasks

// This file makes each graph's workspace snapshot, once: the first remote task of a graph
// to start makes it (package snapshot), records its sha256 on the graph, and every other
// remote task of the graph, and a runner that takes the graph over, streams the same file
// into its pod. It is made when the graph's first remote task starts, not at submit: the
// submit answers at once, and the snapshot holds what the graph's local tasks before it
// produced.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks/snapshot"
)

// snapshotter makes each graph's snapshot once, whichever of its tasks asks first.
type snapshotter struct {
	mu      sync.Mutex
	byGraph map[string]*snapshotOnce
}

type snapshotOnce struct {
	done chan struct{}
	ref  *SnapshotRef
	err  error
}

// SnapshotsDir is where a workspace's snapshots go, under its state directory.
func SnapshotsDir(stateDir string) string { return filepath.Join(stateDir, "snapshots") }

// graphSnapshot is the snapshot g's remote tasks get: nil when the server syncs nothing
// (Config.Sync none). The first call for a graph makes it (or finds the one recorded on
// the graph, made before a restart); the others wait for that one.
func (e *Engine) graphSnapshot(ctx context.Context, g *graph) (*SnapshotRef, error) {
	if e.cfg.Sync == snapshot.None {
		return nil, nil
	}
	s := e.snapshots
	s.mu.Lock()
	if s.byGraph == nil {
		s.byGraph = map[string]*snapshotOnce{}
	}
	once := s.byGraph[g.row.ID]
	if once != nil {
		s.mu.Unlock()
		select {
		case <-once.done:
			return once.ref, once.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	once = &snapshotOnce{done: make(chan struct{})}
	s.byGraph[g.row.ID] = once
	s.mu.Unlock()
	once.ref, once.err = e.makeSnapshot(ctx, g.row.ID, g.row.Snapshot)
	if once.err != nil {
		s.mu.Lock()
		delete(s.byGraph, g.row.ID) // the next start tries again
		s.mu.Unlock()
	}
	close(once.done)
	return once.ref, once.err
}

// forgetSnapshot lets go of a graph's snapshot once the graph is done here.
func (e *Engine) forgetSnapshot(graphID string) {
	e.snapshots.mu.Lock()
	delete(e.snapshots.byGraph, graphID)
	e.snapshots.mu.Unlock()
}

// makeSnapshot finds the snapshot recorded for the graph (sha), or makes one and records
// it.
func (e *Engine) makeSnapshot(ctx context.Context, graphID, sha string) (*SnapshotRef, error) {
	dir := SnapshotsDir(e.cfg.Workspace.StateDir)
	if sha != "" {
		path := filepath.Join(dir, sha+".tar.gz")
		if fi, err := os.Stat(path); err == nil {
			return &SnapshotRef{Path: path, SHA256: sha, Bytes: fi.Size()}, nil
		}
		e.log.Warn("the workspace snapshot recorded for the graph is gone; its remote tasks get a new one", "graph", graphID, "sha256", sha)
	}
	mode := e.cfg.Sync
	if mode == "" {
		mode = snapshot.Git
	}
	start := time.Now()
	s, err := snapshot.Make(ctx, snapshot.Options{
		Root: e.cfg.Workspace.Root, Mode: mode, Dir: dir,
		Exclude: []string{e.cfg.Workspace.StateDir, e.cfg.Workspace.ArtifactsDir},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot snapshot the workspace for its pod: %w", err)
	}
	e.log.Info("made the workspace snapshot for the graph's remote tasks", "graph", graphID, "mode", s.Mode,
		"files", s.Files, "bytes", s.Bytes, "took", time.Since(start).Round(time.Millisecond))
	got, err := e.cfg.DB.SetGraphSnapshot(ctx, graphID, s.SHA256)
	if err != nil {
		return nil, err
	}
	if got != s.SHA256 { // recorded by another runner meanwhile: that one is the graph's
		return e.makeSnapshot(ctx, graphID, got)
	}
	return &SnapshotRef{Path: s.Path, SHA256: s.SHA256, Bytes: s.Bytes}, nil
}

// removeStaleSnapshots removes the snapshot files no unfinished graph uses, older than a
// minute (a snapshot just made may not be recorded yet).
func (e *Engine) removeStaleSnapshots(ctx context.Context) error {
	dir := SnapshotsDir(e.cfg.Workspace.StateDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	inUse, err := e.cfg.DB.SnapshotsInUse(ctx)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		name := ent.Name()
		if slices.Contains(inUse, strings.TrimSuffix(name, ".tar.gz")) {
			continue
		}
		if fi, err := ent.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		os.Remove(filepath.Join(dir, name))
	}
	return nil
}
