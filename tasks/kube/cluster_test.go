//go:build e2e

package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tasks/executortest"
	"github.com/mcp-harness/mcp-harness/tasks/snapshot"
)

// clusterEnv skips the test unless a test cluster runs (e2e/cluster), and returns its
// kubeconfig and namespace.
func clusterEnv(t *testing.T) (kubeconfig, namespace string) {
	t.Helper()
	kubeconfig, namespace = os.Getenv("KUBECONFIG"), os.Getenv("TESTCLUSTER_NAMESPACE")
	if kubeconfig == "" || namespace == "" {
		t.Skip("no test cluster: start one with e2e/cluster/build.sh && e2e/cluster/up.sh, then set -a; . $TESTCLUSTER_RUN/env; set +a")
	}
	return kubeconfig, namespace
}

// The Kubernetes executor passes the executors' conformance suite against the test
// cluster: a real control plane whose nodes run pods as local processes.
func TestKubeExecutor_Conformance(t *testing.T) {
	kubeconfig, ns := clusterEnv(t)
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, executortest.WorkspaceDir), 0o755)
	os.WriteFile(filepath.Join(ws, executortest.WorkspaceFile), []byte(executortest.WorkspaceText+"\n"), 0o644)
	snap, err := snapshot.Make(t.Context(), snapshot.Options{Root: ws, Mode: snapshot.All, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wsID := tasks.WorkspaceID("conformance", ws)
	x := New(Config{Kubeconfig: kubeconfig, Namespace: ns, Workspace: wsID, ScheduleTimeout: time.Minute})
	t.Cleanup(func() {
		// Once closed, nothing of the executor runs on: what stays is the HTTP client's
		// idle connections, which client-go's transport cache keeps for the process, and
		// klog's flush daemon.
		x.Close()
		goleak.VerifyNone(t, goleak.IgnoreCurrent(),
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := x.Check(ctx); err != nil {
		t.Fatalf("Check = %v", err)
	}
	executortest.Run(t, executortest.Harness{
		Executor:  x,
		Workspace: wsID,
		Patience:  90 * time.Second,
		Attempt: func(t *testing.T, id tasks.AttemptID, command, cwd string, env []string) tasks.Attempt {
			return tasks.Attempt{ID: id, Runner: "r-test", Command: command, Cwd: cwd, Env: env,
				Snapshot: &tasks.SnapshotRef{Path: snap.Path, SHA256: snap.SHA256, Bytes: snap.Bytes}}
		},
	})
}
