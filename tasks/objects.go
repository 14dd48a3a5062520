package tasks

// This file keeps archives in object storage (Config.Artifacts, --artifacts-url): a
// finished graph's archive is written as ever, then uploaded and checked by sha256
// (package objstore), recorded with where each log lies in it (archive.LogIndex), and the
// local file removed. A log slice of an expired graph is then served by a range read of
// that log's part of the object alone, whichever process asks: the record names the
// bucket's URL, so the operator CLI opens it too (with the same credentials chain).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// remoteIndex is what an artifact in object storage records beside its display URL: the
// bucket's URL, the object's key and where each log is in it.
type remoteIndex struct {
	Bucket string             `json:"bucket"`
	Key    string             `json:"key"`
	Logs   []archive.LogIndex `json:"logs"`
}

// upload puts the archive w (written locally with an index) in the bucket, checks it and
// removes the local file; it returns the artifact's record.
func (e *Engine) upload(ctx context.Context, graphID string, w archive.Written) (store.Artifact, error) {
	b := e.cfg.Artifacts
	key := b.Key(graphID)
	if err := b.Upload(ctx, key, w.Path, w.Bytes, w.SHA256); err != nil {
		os.Remove(w.Path)
		return store.Artifact{}, err
	}
	os.Remove(w.Path)
	idx, err := json.Marshal(remoteIndex{Bucket: b.URL(), Key: key, Logs: w.Index})
	if err != nil {
		return store.Artifact{}, err
	}
	return store.Artifact{GraphID: graphID, Path: b.Display(key), Bytes: w.Bytes, SHA256: w.SHA256, LogIndex: string(idx)}, nil
}

// buckets holds the buckets opened to read archives, by URL: opening one reads the
// cloud's configuration, which is not worth doing for every read.
var buckets sync.Map // URL -> *objstore.Bucket

func openBucket(ctx context.Context, url string) (*objstore.Bucket, error) {
	if b, ok := buckets.Load(url); ok {
		return b.(*objstore.Bucket), nil
	}
	b, err := objstore.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	if prev, loaded := buckets.LoadOrStore(url, b); loaded {
		b.Close()
		return prev.(*objstore.Bucket), nil
	}
	return b, nil
}

// parseIndex reads an artifact's remote index; ok is false for a local artifact.
func parseIndex(raw string) (remoteIndex, bool, error) {
	if raw == "" {
		return remoteIndex{}, false, nil
	}
	var ix remoteIndex
	if err := json.Unmarshal([]byte(raw), &ix); err != nil {
		return remoteIndex{}, true, fmt.Errorf("the archive's index cannot be read: %v", err)
	}
	return ix, true, nil
}

// openRemoteLog opens task taskID's log in a remote archive by a range read of its part,
// and says how long it is; a task without a log there is fs.ErrNotExist.
func openRemoteLog(ctx context.Context, ix remoteIndex, taskID string) (io.ReadCloser, int64, error) {
	var at *archive.LogIndex
	for i := range ix.Logs {
		if ix.Logs[i].TaskID == taskID {
			at = &ix.Logs[i]
		}
	}
	if at == nil {
		return nil, 0, fmt.Errorf("%s in %s: %w", archive.LogEntry(taskID), ix.Key, fs.ErrNotExist)
	}
	b, err := openBucket(ctx, ix.Bucket)
	if err != nil {
		return nil, 0, err
	}
	rc, err := b.RangeReader(ctx, ix.Key, at.Offset, at.Length)
	if err != nil {
		return nil, 0, err
	}
	r, err := archive.OpenIndexed(rc, *at)
	if err != nil {
		rc.Close()
		return nil, 0, err
	}
	return struct {
		io.Reader
		io.Closer
	}{r, rc}, at.Size, nil
}

// readRemoteLogs reads the slice q asks for of each task's log in a remote archive: one
// range read per log, of that log's part only.
func readRemoteLogs(ctx context.Context, ix remoteIndex, display string, ids []string, q LogQuery) (map[string]LogSlice, error) {
	out := make(map[string]LogSlice, len(ids))
	for _, id := range ids {
		s := LogSlice{Path: display + "#" + archive.LogEntry(id), EOF: true}
		rc, size, err := openRemoteLog(ctx, ix, id)
		switch {
		case errors.Is(err, fs.ErrNotExist) && rc == nil && size == 0 && !hasLog(ix, id):
			out[id] = s // the task wrote no log
			continue
		case err != nil:
			return nil, err
		}
		s, err = sliceOf(s, size, rc, q)
		rc.Close()
		if err != nil {
			return nil, err
		}
		out[id] = s
	}
	return out, nil
}

func hasLog(ix remoteIndex, id string) bool {
	for _, l := range ix.Logs {
		if l.TaskID == id {
			return true
		}
	}
	return false
}

// remoteExists reports whether the object of a remote archive is in its bucket.
func remoteExists(ctx context.Context, ix remoteIndex) (bool, error) {
	b, err := openBucket(ctx, ix.Bucket)
	if err != nil {
		return false, err
	}
	return b.Exists(ctx, ix.Key)
}

// artifactThere says whether a recorded artifact is still where its record says: the
// local file, or the object in its bucket.
func (e *Engine) artifactThere(ctx context.Context, a store.Artifact) error {
	ix, remote, err := parseIndex(a.LogIndex)
	if err != nil || !remote {
		if err == nil {
			_, err = os.Stat(a.Path)
		}
		return err
	}
	ok, err := remoteExists(ctx, ix)
	if err == nil && !ok {
		err = fmt.Errorf("%s: %w", a.Path, fs.ErrNotExist)
	}
	return err
}
