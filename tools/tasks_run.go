package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tasks/dag"
)

// tasksRun is tasks_run: store a graph and start it, answering at once.
var tasksRun = tool[runArgs, RunResult]{
	name: "tasks_run",
	description: "Run shell commands with dependencies (builds, tests, pipelines) in the background; returns a graphId at once, " +
		"then use tasks_status. No input: a prompt fails (pass --yes); interactive programs need shell_open.",
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
		confined := sandboxLine(s.cfg.Sandbox.Policy(), out.WithheldEnv)
		if sub.Remote > 0 {
			confined += fmt.Sprintf("; %d task(s) run in pods on Kubernetes, confined by their pods", sub.Remote)
		}
		text := fmt.Sprintf("graph %s%s: %d task(s) %s.\n%s\nFollow it with tasks_status {\"graphId\": %q, \"waitMs\": 30000}.",
			sub.Graph.ID, quotedName(sub.Graph.Name), sub.Progress.Total, verb, confined, sub.Graph.ID)
		return out, text, nil
	},
}

type runArgs struct {
	Tasks          []taskArg          `json:"tasks" jsonschema:"Each starts once its dependsOn succeeded." toolschema:"required"`
	Name           string             `json:"name,omitempty" jsonschema:"A label."`
	MaxParallel    int                `json:"maxParallel,omitempty" jsonschema:"Default: CPU count." toolschema:"minimum=1"`
	FailFast       bool               `json:"failFast,omitempty" jsonschema:"Cancel the rest at the first failure."`
	IdempotencyKey string             `json:"idempotencyKey,omitempty" jsonschema:"Resent: returns the first graph."`
	Detach         *bool              `json:"detach,omitempty" jsonschema:"Outlive this server in its own process."`
	Executor       tasks.ExecutorName `json:"executor,omitempty" jsonschema:"Default local; kubernetes runs pods."`
}

// taskArg is one task of tasks_run; the bound on retries is tasks.MaxRetries
// (TestSchemas_Bounds).
type taskArg struct {
	ID         string            `json:"id" jsonschema:"Unique in the graph; dependsOn names it." toolschema:"required"`
	Command    string            `json:"command" jsonschema:"Run with bash -c." toolschema:"required"`
	DependsOn  []string          `json:"dependsOn,omitempty" jsonschema:"Must succeed first, else it is skipped."`
	Cwd        string            `json:"cwd,omitempty" jsonschema:"Relative to the workspace root."`
	Env        map[string]string `json:"env,omitempty" jsonschema:"Extra environment variables."`
	TimeoutSec int               `json:"timeoutSec,omitempty" jsonschema:"Kill after this long."`
	Retries    int               `json:"retries,omitempty" jsonschema:"Re-runs on failure." toolschema:"maximum=100"`
	sandboxArgs
	Executor  tasks.ExecutorName `json:"executor,omitempty" jsonschema:"Overrides the graph's."`
	Resources *resourcesArg      `json:"resources,omitempty" jsonschema:"Its pod's requests."`
}

// resourcesArg is what a Kubernetes task's pod asks for, as Kubernetes quantities.
type resourcesArg struct {
	CPU    string `json:"cpu,omitempty" jsonschema:"E.g. 500m, 2."`
	Memory string `json:"memory,omitempty" jsonschema:"E.g. 512Mi."`
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
//
// A task that runs in a pod (executor kubernetes) is confined by its pod (the image, the
// service account, the namespace), not by this machine's sandbox: it takes no sandbox or
// network argument (refused, so that a call never believes a pod is confined as it
// asked), and records no policy.
func (a runArgs) spec(narrow func(sandboxArgs) (sandbox.Policy, error)) (tasks.Spec, error) {
	spec := tasks.Spec{Name: a.Name, MaxParallel: a.MaxParallel, FailFast: a.FailFast, IdempotencyKey: a.IdempotencyKey,
		Executor: a.Executor, Tasks: make([]tasks.TaskSpec, 0, len(a.Tasks))}
	for i, t := range a.Tasks {
		ts := tasks.TaskSpec{ID: t.ID, Command: t.Command, DependsOn: t.DependsOn, Cwd: t.Cwd,
			Env: t.Env, TimeoutSec: t.TimeoutSec, Retries: t.Retries, Executor: t.Executor}
		if t.Resources != nil {
			ts.CPU, ts.Memory = t.Resources.CPU, t.Resources.Memory
		}
		if dag.ExecutorOf(ts, a.Executor) == tasks.ExecutorKubernetes {
			if t.Sandbox != "" || t.Network != "" {
				return tasks.Spec{}, invalidf("task %d (%s): sandbox and network confine local tasks; a kubernetes task is confined by its pod "+
					"(the server's --kube-image, --kube-service-account and --kube-namespace): leave them out, or run it with executor \"local\"", i, t.ID)
			}
		} else {
			p, err := narrow(t.sandboxArgs)
			if err != nil {
				return tasks.Spec{}, fmt.Errorf("task %d (%s): %w", i, t.ID, err)
			}
			ts.Sandbox, ts.Network = string(p.Mode), string(p.Network)
		}
		spec.Tasks = append(spec.Tasks, ts)
	}
	return spec, nil
}

// RunResultOf is tasks_run's result for a graph submitted.
func RunResultOf(sub tasks.Submitted) RunResult {
	return RunResult{GraphID: sub.Graph.ID, Name: sub.Graph.Name, Status: sub.Progress.State(), Created: sub.Created,
		TaskCount: sub.Progress.Total, Detached: sub.Detached}
}
