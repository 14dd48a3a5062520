package tools

// What the task tools share: a graph's name and progress in words, and the graph file the
// operator CLI submits as tasks_run's arguments.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// quotedName is a graph's name for a text, quoted after a space; "" for none.
func quotedName(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" %q", name)
}

// graphProgress says in a line how a graph stands, for progress notifications:
// "3/10 done; running: build 12s, lint 3s".
func (s *Table) graphProgress(ctx context.Context, graphID string) string {
	snap, err := s.tasks.Snapshot(ctx, graphID)
	if err != nil {
		return "waiting"
	}
	p := snap.Progress()
	msg := fmt.Sprintf("%d/%d done", p.Done(), p.Total)
	if p.Failed > 0 {
		msg += fmt.Sprintf(" (%d failed)", p.Failed)
	}
	var running []string
	now := time.Now()
	for _, t := range snap.Tasks {
		if t.Status == tasks.Running && len(running) < 5 {
			running = append(running, fmt.Sprintf("%s %s", t.ID, (time.Duration(*t.Times(now).DurationMs)*time.Millisecond).Round(time.Second)))
		}
	}
	if len(running) > 0 {
		msg += "; running: " + strings.Join(running, ", ")
	}
	return msg
}

// GraphFile decodes a graph submitted from outside a server (the operator CLI's `tasks
// run`): tasks_run's arguments as JSON, where detach is implied and detach: false is
// refused.
func GraphFile(args []byte) (tasks.Spec, error) {
	var a runArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return tasks.Spec{}, fmt.Errorf("%w: the graph file: %v", tasks.ErrInvalid, err)
	}
	if a.Detach != nil && !*a.Detach {
		return tasks.Spec{}, fmt.Errorf("%w: the graph file says detach: false; from a terminal a graph always runs detached", tasks.ErrInvalid)
	}
	// The detached runner that runs it is confined as a server with the default flags
	// would be (workspace-write, network on): a task may only tighten that.
	defaults := sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: sandbox.NetworkOn}
	return a.spec(func(sa sandboxArgs) (sandbox.Policy, error) {
		return defaults.Narrow(string(sa.Sandbox), string(sa.Network))
	})
}
