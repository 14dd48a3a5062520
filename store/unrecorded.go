package store

// This file keeps the task states a runner could not write before it exited: the database
// was locked past its shutdown deadline, or it was told to exit at once. They go, in the
// order they happened, to a file beside the database (unrecorded/<runnerID>.jsonl), and
// the runner that reconciles the exited one applies them before anything else, so the
// record ends as the exited runner saw it (a task that exited 0 is succeeded) rather than
// as the guess reconciliation makes without them (RUNNER_RESTARTED).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// unrecordedPath is the file of runnerID's unrecorded states.
func (db *DB) unrecordedPath(runnerID string) string {
	return filepath.Join(filepath.Dir(db.path), "unrecorded", runnerID+".jsonl")
}

// SaveUnrecorded appends task states that runnerID could not write to the database to its
// file of unrecorded states (0600), synced before it returns, and returns the file's path.
func (db *DB) SaveUnrecorded(runnerID string, updates []TaskUpdate) (string, error) {
	path := db.unrecordedPath(runnerID)
	if len(updates) == 0 {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return path, fmt.Errorf("save unrecorded states: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return path, fmt.Errorf("save unrecorded states: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, u := range updates {
		if err := enc.Encode(u); err != nil {
			f.Close()
			return path, fmt.Errorf("save unrecorded states: %w", err)
		}
	}
	err = errors.Join(w.Flush(), f.Sync(), f.Close())
	if err != nil {
		return path, fmt.Errorf("save unrecorded states: %w", err)
	}
	return path, nil
}

// ApplyUnrecorded writes the states runnerID left unrecorded, in their order and in one
// transaction, as runnerID: only to graphs it still owns, and a task already terminal stays
// as it is (see UpdateTasks). The file is removed once they are written. It returns how
// many states the file held; a runner that left none has no file, and that is no error. A
// line cut short by a crash while the file was written ends the list.
func (db *DB) ApplyUnrecorded(ctx context.Context, runnerID string) (int, error) {
	path := db.unrecordedPath(runnerID)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("unrecorded states of %s: %w", runnerID, err)
	}
	var updates []TaskUpdate
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var u TaskUpdate
		if json.Unmarshal(sc.Bytes(), &u) != nil {
			break
		}
		updates = append(updates, u)
	}
	f.Close()
	if err := db.UpdateTasks(ctx, runnerID, updates); err != nil {
		return 0, fmt.Errorf("unrecorded states of %s: %w", runnerID, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return len(updates), fmt.Errorf("unrecorded states of %s: %w", runnerID, err)
	}
	return len(updates), nil
}
