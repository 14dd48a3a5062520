package tasks_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tasks/executortest"
)

// The local executor passes the executors' conformance suite (the Kubernetes one runs it
// in tasks/kube).
func TestLocalExecutor_Conformance(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, executortest.WorkspaceDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, executortest.WorkspaceFile), []byte(executortest.WorkspaceText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	ex := tasks.NewLocalExecutor(nil, nil)
	t.Cleanup(func() { ex.Close() })
	executortest.Run(t, executortest.Harness{
		Executor:  ex,
		Workspace: tasks.WorkspaceID("host", ws),
		Attempt: func(t *testing.T, id tasks.AttemptID, command, cwd string, env []string) tasks.Attempt {
			dir := filepath.Join(ws, cwd)
			return tasks.Attempt{ID: id, Command: command, Cwd: cwd, Env: append(os.Environ(), env...),
				Dir: &sandbox.Where{Path: dir, Exec: dir}, Policy: sandbox.Unconfined, Log: filepath.Join(logs, id.GraphID+"-"+id.TaskID+".log")}
		},
	})
}
