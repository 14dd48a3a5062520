package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// tasksRun is tasks_run: store a graph and start it, answering at once.
var tasksRun = tool[runArgs, RunResult]{
	name: "tasks_run",
	description: "Run shell commands with dependencies (builds, test suites, pipelines) in the background; returns a graphId at once, " +
		"then use tasks_status. Tasks read no input: a prompt fails (pass --yes). For interactive programs use shell_open.",
	annotations: destructive,
	waits:       neverWaits,
	adjustInput: func(in map[string]any) {
		setAt(in, []string{"tasks", "[]", "id"}, func(p map[string]any) { p["pattern"] = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" })
		tightenOnly(in, "tasks", "[]")
	},
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a runArgs) (RunResult, string, error) {
		spec, err := a.spec(s.narrow)
		if err != nil {
			return RunResult{}, "", err
		}
		detach := s.cfg.Detach
		if a.Detach != nil {
			detach = *a.Detach
		}
		var sub tasks.Submitted
		if detach {
			sub, err = s.tasks.SubmitDetached(ctx, spec)
		} else {
			sub, err = s.tasks.Submit(ctx, spec)
		}
		if err != nil {
			return RunResult{}, "", err
		}
		out := RunResultOf(sub)
		var envs []map[string]string
		for _, t := range a.Tasks {
			envs = append(envs, t.Env)
		}
		out.WithheldEnv = s.withheldFromAny(envs)
		verb := "submitted"
		if !sub.Created {
			verb = "already submitted with this idempotencyKey; nothing new was started"
		}
		text := fmt.Sprintf("graph %s%s: %d task(s) %s.\n%s\nFollow it with tasks_status {\"graphId\": %q, \"waitMs\": 30000}.",
			sub.Graph.ID, quotedName(sub.Graph.Name), len(sub.Tasks), verb, sandboxLine(s.cfg.Sandbox.Policy(), out.WithheldEnv), sub.Graph.ID)
		return out, text, nil
	},
}

type runArgs struct {
	Tasks          []taskArg `json:"tasks" jsonschema:"Tasks; each starts once its dependsOn succeeded." toolschema:"required"`
	Name           string    `json:"name,omitempty" jsonschema:"A label for the graph."`
	MaxParallel    int       `json:"maxParallel,omitempty" jsonschema:"Default: CPU count." toolschema:"minimum=1"`
	FailFast       bool      `json:"failFast,omitempty" jsonschema:"Cancel the rest at the first failure."`
	IdempotencyKey string    `json:"idempotencyKey,omitempty" jsonschema:"Resending this key returns the first graph."`
	Detach         *bool     `json:"detach,omitempty" jsonschema:"Run in a process that outlives this server."`
}

// taskArg is one task of tasks_run; the bound on retries is tasks.MaxRetries
// (TestSchemas_Bounds).
type taskArg struct {
	ID         string            `json:"id" jsonschema:"Unique in the graph; dependsOn names it." toolschema:"required"`
	Command    string            `json:"command" jsonschema:"Run with bash -c." toolschema:"required"`
	DependsOn  []string          `json:"dependsOn,omitempty" jsonschema:"Ids to succeed first, else it is skipped."`
	Cwd        string            `json:"cwd,omitempty" jsonschema:"Relative to the workspace root."`
	Env        map[string]string `json:"env,omitempty" jsonschema:"Extra environment variables."`
	TimeoutSec int               `json:"timeoutSec,omitempty" jsonschema:"Kill after this long."`
	Retries    int               `json:"retries,omitempty" jsonschema:"Re-runs on failure." toolschema:"maximum=100"`
	sandboxArgs
}

// RunResult is the tasks_run result (and `tasks run --json`'s): the graph, not an echo of
// it (a 10,000-task echo is a third of a megabyte). Detached: a detached runner of its own
// claimed the graph.
type RunResult struct {
	GraphID   string           `json:"graphId"`
	Name      string           `json:"name"`
	Status    tasks.GraphState `json:"status"`
	Created   bool             `json:"created"`
	TaskCount int              `json:"taskCount"`
	Detached  bool             `json:"detached"`
	// WithheldEnv names the server's variables a task of the graph does not inherit.
	WithheldEnv []string `json:"withheldEnv"`
}

// spec is the graph to submit, each task's policy settled by narrow from the server's
// and its own sandbox arguments: a task that asks for more than the server allows refuses
// the whole graph, as any other invalid task does.
func (a runArgs) spec(narrow func(sandboxArgs) (sandbox.Policy, error)) (tasks.Spec, error) {
	spec := tasks.Spec{Name: a.Name, MaxParallel: a.MaxParallel, FailFast: a.FailFast, IdempotencyKey: a.IdempotencyKey}
	for i, t := range a.Tasks {
		p, err := narrow(t.sandboxArgs)
		if err != nil {
			return tasks.Spec{}, fmt.Errorf("task %d (%s): %w", i, t.ID, err)
		}
		spec.Tasks = append(spec.Tasks, tasks.TaskSpec{ID: t.ID, Command: t.Command, DependsOn: t.DependsOn, Cwd: t.Cwd,
			Env: t.Env, TimeoutSec: t.TimeoutSec, Retries: t.Retries, Sandbox: string(p.Mode), Network: string(p.Network)})
	}
	return spec, nil
}

// RunResultOf is tasks_run's result for a graph submitted.
func RunResultOf(sub tasks.Submitted) RunResult {
	return RunResult{GraphID: sub.Graph.ID, Name: sub.Graph.Name, Status: sub.Progress().State(), Created: sub.Created,
		TaskCount: len(sub.Tasks), Detached: sub.Detached}
}
