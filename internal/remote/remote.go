// Package remote reaches what lies off this machine, a Kubernetes cluster and S3 buckets,
// through a helper executable of its own, mcp-harness-remote, which the server starts at
// the first call that needs it and stops when it stops.
//
// Why a second executable: client-go with the Kubernetes API types, and the AWS SDK, were
// half of the server: its executable went from 54.7 MB to 28.8 MB without them, its code
// and read-only data (what `size` calls text) from 37.5 MB to 18.5 MB. A process maps all
// of its executable, and on Linux 6.x, with large page-cache folios, a freshly installed
// one was resident whole: a server that never ran a remote task paid about 19 MiB of RSS
// for them, and their init functions at every start. Like git's git-remote-https, which
// keeps libcurl out of git, the helper keeps them out of mcp-harness: a server that uses
// neither starts no helper and maps neither.
//
// The helper serves HTTP/1.1 on a Unix socket in a private directory (0700). The server
// makes the listening socket and passes it to the helper as its descriptor 3, so a call
// may be made the moment the helper is started; each call is a POST with a JSON body
// (wire.go), and the streams (an attempt's output, an object's bytes, a wait's events)
// are the answers' bodies. The helper's standard input is its lifeline: it exits when the
// server closes it, or dies and the kernel does. Its standard error goes into the
// server's log, line by line.
//
// The helper is found beside the server's executable, else on PATH (HelperName); the
// environment variable HelperEnv names another. A server without it runs, and refuses
// only what needs it, saying how to install it.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// HelperName is the helper executable's name.
const HelperName = "mcp-harness-remote"

// HelperEnv, when set, is the path of the helper executable to run.
const HelperEnv = "MCP_HARNESS_REMOTE"

// ErrNoHelper reports that the helper executable cannot be found.
var ErrNoHelper = errors.New(HelperName + " was not found")

// Helper is the helper process, started at the first call that needs it, and started
// again at the next call if it died (a crash, the OOM killer): each start is a new
// generation, whose executors are opened again (KubeExecutor). Its zero value is ready;
// Close stops the process, and a call after Close fails.
type Helper struct {
	// Log receives the helper's own log lines; nil: slog.Default().
	Log *slog.Logger

	mu     sync.Mutex
	closed bool
	gen    int            // helpers started so far
	cmd    *exec.Cmd      // the helper now; nil before the first call, and once it is found dead
	life   io.WriteCloser // its standard input
	dir    string         // the private directory of its socket
	client *http.Client
	exited chan struct{} // closed once it exited (and was reaped)
	logged chan struct{} // closed once its standard error ended and all of it is logged
	logs   *os.File      // the read end of its standard error
	// last is its last log line, which says why when it exits at once (set by the
	// reader of its log, which must not wait for mu: Close holds mu while it waits).
	last *atomic.Pointer[string]
}

// find is the helper executable's path.
func find() (string, error) {
	if p := os.Getenv(HelperEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s names %s: %v", ErrNoHelper, HelperEnv, p, err)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), HelperName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w beside mcp-harness or on PATH: Kubernetes tasks and s3:// buckets run through it; install it from the same release (or go install github.com/mcp-harness/mcp-harness/cmd/%s), or name it with %s", ErrNoHelper, HelperName, HelperEnv)
}

// errNotRunning reports a call that would have needed a helper started.
var errNotRunning = errors.New(HelperName + " does not run")

// connect returns the client of the helper and its generation. When none runs (none was
// started, or the one started died), start says whether to start one.
func (h *Helper) connect(start bool) (*http.Client, int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, 0, errors.New(HelperName + " was stopped: the server is shutting down")
	}
	if h.cmd != nil {
		select {
		case <-h.exited:
			h.log().Warn("the remote helper exited; starting it again at the next call that needs it", "pid", h.cmd.Process.Pid, "status", h.cmd.ProcessState.String())
			h.forgetLocked()
		default:
		}
	}
	if h.cmd == nil {
		if !start {
			return nil, 0, errNotRunning
		}
		if err := h.startLocked(); err != nil {
			return nil, 0, err
		}
	}
	return h.client, h.gen, nil
}

// running returns the generation of the helper that runs now, and whether one does.
func (h *Helper) running() (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return 0, false
	}
	select {
	case <-h.exited:
		return 0, false
	default:
		return h.gen, true
	}
}

func (h *Helper) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

func (h *Helper) startLocked() error {
	path, err := find()
	if err != nil {
		return err
	}
	dir, err := socketDir()
	if err != nil {
		return fmt.Errorf("start %s: %v", HelperName, err)
	}
	fail := func(err error) error {
		os.RemoveAll(dir)
		return fmt.Errorf("start %s: %v", HelperName, err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	lf, err := ln.File() // a descriptor of its own for the helper; ours is closed at once
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err != nil {
		return fail(err)
	}
	defer lf.Close()
	cmd := exec.Command(path, "serve", Protocol)
	cmd.ExtraFiles = []*os.File{lf}
	life, err := cmd.StdinPipe()
	if err != nil {
		return fail(err)
	}
	// Its standard error is a pipe of ours, not os/exec's: a program the helper starts
	// (a kubeconfig's credential plugin) may hold it after the helper exited, and the
	// helper's exit must be seen all the same (it is, by Wait, which does not wait for it).
	logs, logsW, err := os.Pipe()
	if err != nil {
		life.Close()
		return fail(err)
	}
	cmd.Stderr = logsW
	err = cmd.Start()
	logsW.Close()
	if err != nil {
		life.Close()
		logs.Close()
		return fail(err)
	}
	log, exited, logged, last := h.log(), make(chan struct{}), make(chan struct{}), new(atomic.Pointer[string])
	go func() {
		defer close(exited)
		cmd.Wait()
	}()
	go func() {
		defer close(logged)
		logLines(logs, func(line string) {
			log.Info(line, "from", HelperName)
			last.Store(&line)
		})
	}()
	h.gen++
	h.cmd, h.life, h.dir, h.exited, h.logged, h.logs, h.last = cmd, life, dir, exited, logged, logs, last
	h.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 16,
		DisableCompression:  true,
	}}
	return nil
}

// maxSocketPath is the longest path a Unix socket may have everywhere (sun_path holds
// 104 bytes on macOS, 108 on Linux, the terminating NUL included).
const maxSocketPath = 103

// socketDir makes the private directory of the helper's socket: in the temporary
// directory, or in /tmp when that one's path is too long for a socket's.
func socketDir() (string, error) {
	const name = "mcp-harness-remote-"
	dir, err := os.MkdirTemp("", name)
	if err != nil || len(filepath.Join(dir, "sock")) <= maxSocketPath {
		return dir, err
	}
	os.Remove(dir)
	return os.MkdirTemp("/tmp", name)
}

// logDrain is how long the log lines of a helper that exited are still read: a program
// it started may hold its standard error open for longer.
const logDrain = time.Second

// forgetLocked lets go of a helper that exited.
func (h *Helper) forgetLocked() {
	h.client.CloseIdleConnections()
	h.life.Close()
	select {
	case <-h.logged:
	case <-time.After(logDrain):
	}
	h.logs.Close() // ends the reader of its log, if something still held the pipe
	<-h.logged
	os.RemoveAll(h.dir)
	h.cmd, h.life, h.dir, h.client, h.last, h.logs = nil, nil, "", nil, nil, nil
}

// maxLogLine is the longest log line of the helper logged whole; a longer one is cut.
const maxLogLine = 64 << 10

// logLines calls line for each line read from r until it ends: a line longer than
// maxLogLine is cut there, and the reading goes on.
func logLines(r io.Reader, line func(string)) {
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		b, isPrefix, err := br.ReadLine()
		if len(b) > 0 || (err == nil && !isPrefix) {
			line(string(b))
		}
		for isPrefix && err == nil { // the rest of a line too long
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// whyWait is how long a call that found no helper answering waits for the helper to
// exit, to say why: one that refuses to serve (another release's) exits at once.
const whyWait = time.Second

// why says why a call found no helper answering: how the helper exited and the last
// thing it logged, once it has exited; "" while it runs.
func (h *Helper) why() string {
	h.mu.Lock()
	cmd, exited, logged, last := h.cmd, h.exited, h.logged, h.last
	h.mu.Unlock()
	if cmd == nil {
		return ""
	}
	deadline := time.After(whyWait)
	select {
	case <-exited:
	case <-deadline:
		return ""
	}
	select {
	case <-logged:
	case <-deadline:
	}
	line := ""
	if p := last.Load(); p != nil {
		line = *p
	}
	return fmt.Sprintf(" (it exited, %s: %s)", cmd.ProcessState, line)
}

// closeWait is how long Close waits for the helper to exit once told to, before it
// kills it.
const closeWait = 5 * time.Second

// Close stops the helper, if one runs: it closes the helper's lifeline and waits for it
// to exit (killing it after closeWait), then removes its socket's directory.
func (h *Helper) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if h.cmd == nil {
		return nil
	}
	h.life.Close()
	var err error
	select {
	case <-h.exited:
	case <-time.After(closeWait):
		h.cmd.Process.Kill()
		err = fmt.Errorf("%s did not exit within %s of being told to, and was killed", HelperName, closeWait)
		<-h.exited
	}
	if err == nil && !h.cmd.ProcessState.Success() {
		err = fmt.Errorf("%s: %s", HelperName, h.cmd.ProcessState)
	}
	h.forgetLocked()
	return err
}

// pid is the process id of the helper that runs now, 0 if none does.
func (h *Helper) pid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return 0
	}
	return h.cmd.Process.Pid
}

// UseLog sets where the helper's log lines go, if nothing set it before.
func (h *Helper) UseLog(log *slog.Logger) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Log == nil {
		h.Log = log
	}
}

// post makes the call at path with body in and returns the answer's body, which the
// caller closes, or the helper's error. It starts a helper when none runs.
func (h *Helper) post(ctx context.Context, path string, in any) (io.ReadCloser, error) {
	return h.send(ctx, path, in, true)
}

func (h *Helper) send(ctx context.Context, path string, in any, start bool) (io.ReadCloser, error) {
	c, _, err := h.connect(start)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+HelperName+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s does not answer: %v%s", tasks.ErrExecutorUnavailable, HelperName, err, h.why())
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	var we WireError
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&we); err != nil || resp.StatusCode != http.StatusConflict {
		return nil, fmt.Errorf("%s answered %s to %s", HelperName, resp.Status, path)
	}
	return nil, &we
}

// call makes the call at path and decodes its JSON answer into out (nil: discards it),
// starting a helper when none runs.
func (h *Helper) call(ctx context.Context, path string, in, out any) error {
	return h.exchange(ctx, path, in, out, true)
}

// callRunning makes the call at path, and discards its answer, if a helper runs now; it
// starts none.
func (h *Helper) callRunning(ctx context.Context, path string, in any) error {
	return h.exchange(ctx, path, in, nil, false)
}

func (h *Helper) exchange(ctx context.Context, path string, in, out any, start bool) error {
	body, err := h.send(ctx, path, in, start)
	if err != nil {
		return err
	}
	defer body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, body)
		return err
	}
	if err := json.NewDecoder(body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s's answer to %s: %v", HelperName, path, err)
	}
	return nil
}

// Shared is this process's helper: Install puts it behind objstore.OpenS3, and the
// server runs its Kubernetes executor in it. The program closes it when it is done.
var Shared = &Helper{}

// Install has s3 buckets opened in this process go through Shared.
func Install() { objstore.OpenS3 = Shared.OpenS3 }
