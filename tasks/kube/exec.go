package kube

// This file streams a graph's workspace snapshot into a running pod through pods/exec
// (the contract's way in: no volume, no image, no registry): the snapshot file on the
// exec's stdin, unpacked by a shell and tar in the container (see deliver in job.go),
// once per attempt, in the background of Wait, retried a few times before the attempt is
// given up as SPAWN_FAILED.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// deliverTries and deliverTimeout bound the snapshot's delivery: tries in all, each within
// the timeout (a snapshot of hundreds of megabytes takes a while to stream).
const (
	deliverTries   = 4
	deliverTimeout = 10 * time.Minute
)

// deliverOnce starts the snapshot's delivery into pod, unless one is under way or done,
// and returns why it failed once it has, for good.
func (x *Executor) deliverOnce(r *run, pod string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deliverErr != nil {
		return r.deliverErr
	}
	if r.delivering || (r.delivered && r.deliveredTo == pod) {
		return nil
	}
	r.delivering = true
	go func() {
		err := x.deliver(r, pod)
		r.mu.Lock()
		r.delivering = false
		if err != nil {
			r.deliverErr = fmt.Errorf("cannot stream the workspace into pod %s: %v", pod, err)
		} else {
			r.delivered, r.deliveredTo = true, pod
		}
		r.mu.Unlock()
		r.notify()
	}()
	return nil
}

// deliver streams r's snapshot into pod, trying again on failure.
func (x *Executor) deliver(r *run, pod string) error {
	var err error
	for try := 0; try < deliverTries; try++ {
		if try > 0 {
			time.Sleep(time.Duration(1<<try) * time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
		err = x.deliverTry(ctx, r, pod)
		cancel()
		if err == nil {
			return nil
		}
		x.log.Debug("streaming the workspace into a pod failed; trying again", "pod", pod, "try", try+1, "err", err)
	}
	return err
}

func (x *Executor) deliverTry(ctx context.Context, r *run, pod string) error {
	if r.takeover {
		// Taken over from a runner that may have streamed it in already: asked first,
		// so a large snapshot is not sent again for nothing.
		if x.exec(ctx, pod, delivered, nil) == nil {
			return nil
		}
	}
	f, err := os.Open(r.a.Snapshot.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	return x.exec(ctx, pod, deliver, f)
}

// exec runs script with sh -c in pod's task container, stdin (if not nil) on its input;
// it fails with what the script wrote when it exits non-zero.
func (x *Executor) exec(ctx context.Context, pod, script string, stdin io.Reader) error {
	req := x.client.execRequest(pod, &corev1.PodExecOptions{Container: container, Command: []string{"sh", "-c", script},
		Stdin: stdin != nil, Stdout: true, Stderr: true})
	spdy, err := remotecommand.NewSPDYExecutor(x.rest, "POST", req.URL())
	if err != nil {
		return err
	}
	ws, err := remotecommand.NewWebSocketExecutor(x.rest, "GET", req.URL().String())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	// stdout and stderr are copied by goroutines of their own: one buffer takes both
	// under a lock.
	var out lockedBuffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &out})
	if err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return fmt.Errorf("%v: %s", err, msg)
		}
		return err
	}
	return nil
}

// lockedBuffer is a buffer that several goroutines may write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
