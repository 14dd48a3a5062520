// Package helper is the remote helper's side of package remote: the calls of the server,
// served on the socket it was given, run by the Kubernetes executor of tasks/kube and the
// S3 buckets of objstore/s3. cmd/mcp-harness-remote is this package's command.
package helper

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	"github.com/mcp-harness/mcp-harness/internal/objstore/s3"
	"github.com/mcp-harness/mcp-harness/internal/remote"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tasks/kube"
)

// Serve serves the server's calls on ln until lifeline ends (the server closed it, or
// exited), then closes the executors and buckets it made and returns.
func Serve(ln net.Listener, lifeline io.Reader, log *slog.Logger) error {
	h := &helper{log: log, kube: map[int64]*kube.Executor{}, buckets: map[string]objstore.Backend{}}
	mux := http.NewServeMux()
	kubeCall := func(path string, fn func(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			var c remote.KubeCall
			if !decode(w, r, &c) {
				return
			}
			x := h.executor(c.Executor)
			if x == nil {
				// Made by a helper before this one (ids are random, never reused): the
				// server opens its executor again here and calls again.
				fail(w, fmt.Errorf("%w: no Kubernetes executor %d in this %s", tasks.ErrExecutorUnavailable, c.Executor, remote.HelperName))
				return
			}
			fn(w, r, x, c)
		})
	}
	mux.HandleFunc("POST "+remote.PathKubeOpen, h.kubeOpen)
	mux.HandleFunc("POST "+remote.PathKubeClose, h.kubeClose)
	kubeCall(remote.PathKubeCheck, func(w http.ResponseWriter, r *http.Request, x *kube.Executor, _ remote.KubeCall) {
		answer(w, nil, x.Check(r.Context()))
	})
	kubeCall(remote.PathKubeStart, func(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall) {
		if c.Attempt == nil {
			fail(w, errors.New("a start without its attempt"))
			return
		}
		place, err := x.Start(r.Context(), c.Attempt.Task())
		answer(w, remote.KubeResult{Placement: place}, err)
	})
	kubeCall(remote.PathKubeAttach, func(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall) {
		rc, err := x.Attach(r.Context(), c.ID, c.Offset)
		if err != nil {
			fail(w, err)
			return
		}
		defer rc.Close()
		stream(w, rc)
	})
	kubeCall(remote.PathKubeWait, h.kubeWait)
	kubeCall(remote.PathKubeStatus, func(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall) {
		st, err := x.Status(r.Context(), c.ID)
		answer(w, remote.KubeResult{Status: remote.StatusOf(st)}, err)
	})
	kubeCall(remote.PathKubeCancel, func(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall) {
		answer(w, nil, x.Cancel(r.Context(), c.ID, c.Grace))
	})
	kubeCall(remote.PathKubeList, func(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall) {
		sts, err := x.List(r.Context(), c.Workspace)
		res := remote.KubeResult{Statuses: make([]remote.RunStatus, len(sts))}
		for i, st := range sts {
			res.Statuses[i] = remote.StatusOf(st)
		}
		answer(w, res, err)
	})
	kubeCall(remote.PathKubeRelease, func(w http.ResponseWriter, _ *http.Request, x *kube.Executor, c remote.KubeCall) {
		x.Release(c.ID)
		answer(w, nil, nil)
	})

	s3Call := func(path string, fn func(w http.ResponseWriter, r *http.Request, b objstore.Backend, c remote.S3Call)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			var c remote.S3Call
			if !decode(w, r, &c) {
				return
			}
			b, err := h.bucket(r.Context(), c)
			if err != nil {
				fail(w, err)
				return
			}
			fn(w, r, b, c)
		})
	}
	s3Call(remote.PathS3Open, func(w http.ResponseWriter, _ *http.Request, _ objstore.Backend, _ remote.S3Call) {
		answer(w, nil, nil)
	})
	s3Call(remote.PathS3Put, func(w http.ResponseWriter, r *http.Request, b objstore.Backend, c remote.S3Call) {
		f, err := os.Open(c.Path)
		if err != nil {
			fail(w, err)
			return
		}
		defer f.Close()
		answer(w, nil, b.Put(r.Context(), c.Key, f, c.Size, c.Sum))
	})
	s3Call(remote.PathS3Range, func(w http.ResponseWriter, r *http.Request, b objstore.Backend, c remote.S3Call) {
		rc, err := b.RangeReader(r.Context(), c.Key, c.Offset, c.Length)
		if err != nil {
			fail(w, err)
			return
		}
		defer rc.Close()
		stream(w, rc)
	})
	s3Call(remote.PathS3Exists, func(w http.ResponseWriter, r *http.Request, b objstore.Backend, c remote.S3Call) {
		ok, err := b.Exists(r.Context(), c.Key)
		answer(w, remote.S3Result{Exists: ok}, err)
	})
	s3Call(remote.PathS3Remove, func(w http.ResponseWriter, r *http.Request, b objstore.Backend, c remote.S3Call) {
		answer(w, nil, b.Remove(r.Context(), c.Key))
	})
	s3Call(remote.PathS3Check, func(w http.ResponseWriter, r *http.Request, b objstore.Backend, c remote.S3Call) {
		answer(w, nil, b.Check(r.Context(), c.Prefix))
	})

	srv := &http.Server{Handler: mux, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(&serverOnly{Listener: ln, server: os.Getppid(), log: log}) }()
	io.Copy(io.Discard, lifeline)
	// The server is gone or done: calls in flight are cut (their callers are gone too).
	srv.Close()
	err := <-served
	h.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// serverOnly accepts the connections of the server that started the helper, its parent,
// and refuses any other. The socket's directory is private to the user, but the agent's
// commands run as that user, and a confined command may still connect to Unix sockets
// (even with the network off): through the helper it would start pods, or upload files,
// with the server's credentials.
type serverOnly struct {
	net.Listener
	server int
	log    *slog.Logger
}

func (l *serverOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			continue
		}
		pid, err := peerPid(uc)
		if err == nil && pid == l.server {
			return c, nil
		}
		l.log.Warn("refused a connection that did not come from the server", "pid", pid, "server", l.server, "err", err)
		c.Close()
	}
}

// helper is what the calls reach: the executors and buckets made so far.
type helper struct {
	log *slog.Logger

	mu   sync.Mutex
	kube map[int64]*kube.Executor

	bucketsMu sync.Mutex                  // held while a bucket is opened, which may read files
	buckets   map[string]objstore.Backend // by bucket and query
}

func (h *helper) kubeOpen(w http.ResponseWriter, r *http.Request) {
	var c remote.KubeConfig
	if !decode(w, r, &c) {
		return
	}
	x := kube.New(kube.Config{
		Kubeconfig: c.Kubeconfig, Context: c.Context, Namespace: c.Namespace, Image: c.Image,
		ServiceAccount: c.ServiceAccount, Workspace: c.Workspace, ScheduleTimeout: c.ScheduleTimeout,
		Logger: h.log,
	})
	h.mu.Lock()
	id := newID(h.kube)
	h.kube[id] = x
	h.mu.Unlock()
	answer(w, remote.KubeResult{Executor: id}, nil)
}

func (h *helper) kubeClose(w http.ResponseWriter, r *http.Request) {
	var c remote.KubeCall
	if !decode(w, r, &c) {
		return
	}
	h.mu.Lock()
	x := h.kube[c.Executor]
	delete(h.kube, c.Executor)
	h.mu.Unlock()
	if x != nil {
		x.Close()
	}
	answer(w, nil, nil)
}

// newID is an executor id not in use here, and in no helper before this one (random, of
// 62 bits): a call that a server meant for an executor of a helper that died is refused,
// never taken by another executor.
func newID(used map[int64]*kube.Executor) int64 {
	for {
		var b [8]byte
		rand.Read(b[:])
		id := int64(binary.BigEndian.Uint64(b[:]) >> 2)
		if _, ok := used[id]; id != 0 && !ok {
			return id
		}
	}
}

func (h *helper) executor(id int64) *kube.Executor {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kube[id]
}

// kubeWait streams the wait's events, one JSON line each, flushed as they come.
func (h *helper) kubeWait(w http.ResponseWriter, r *http.Request, x *kube.Executor, c remote.KubeCall) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush() // the server's call returns: the wait has begun
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(ev remote.WaitEvent) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(ev)
		rc.Flush()
	}
	st, err := x.Wait(r.Context(), c.ID, func(p tasks.Placement) { send(remote.WaitEvent{Placed: &p}) })
	if err != nil {
		send(remote.WaitEvent{Error: remote.ErrorOf(err)})
		return
	}
	ws := remote.StatusOf(st)
	send(remote.WaitEvent{Ended: &ws})
}

// bucket is the backend c names, opened at its first call.
func (h *helper) bucket(ctx context.Context, c remote.S3Call) (objstore.Backend, error) {
	name := c.Bucket + "?" + c.Query
	h.bucketsMu.Lock()
	defer h.bucketsMu.Unlock()
	if b := h.buckets[name]; b != nil {
		return b, nil
	}
	q, err := url.ParseQuery(c.Query)
	if err != nil {
		return nil, err
	}
	b, err := s3.Open(ctx, c.Bucket, q)
	if err != nil {
		return nil, err
	}
	h.buckets[name] = b
	return b, nil
}

// close stops the executors watching and closes the buckets.
func (h *helper) close() {
	h.mu.Lock()
	for id, x := range h.kube {
		x.Close()
		delete(h.kube, id)
	}
	h.mu.Unlock()
	h.bucketsMu.Lock()
	defer h.bucketsMu.Unlock()
	for name, b := range h.buckets {
		b.Close()
		delete(h.buckets, name)
	}
}

// maxCall bounds a call's body: an attempt's environment is the largest thing a call
// carries.
const maxCall = 64 << 20

// decode reads the call's body into v, or answers that it cannot.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCall)).Decode(v); err != nil {
		fail(w, fmt.Errorf("a call to %s that cannot be read: %v", r.URL.Path, err))
		return false
	}
	return true
}

// answer answers res as JSON, or err.
func answer(w http.ResponseWriter, res any, err error) {
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if res == nil {
		res = struct{}{}
	}
	json.NewEncoder(w).Encode(res)
}

// fail answers err, with its kinds (remote.WireError).
func fail(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusConflict)
	json.NewEncoder(w).Encode(remote.ErrorOf(err))
}

// stream answers what r reads, flushed as it comes (an attempt's output is followed as
// it is written).
func stream(w http.ResponseWriter, r io.Reader) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush() // the server's call returns before the first byte, which may be long in coming
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			// An error after the answer began cannot be said but by cutting the stream:
			// the reader then sees it end early, not with io.EOF.
			if !errors.Is(err, io.EOF) {
				panic(http.ErrAbortHandler)
			}
			return
		}
	}
}
