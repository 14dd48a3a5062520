package tools

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/pty"
)

// shellOpen is shell_open: start a program under a new terminal and read its first output.
var shellOpen = tool[openArgs, openResult]{
	name: "shell_open",
	description: "Start a program (default: a shell) in a terminal kept between calls (shells, REPLs, dev servers, TUIs); " +
		"returns its first output and a sessionId. Size and wait arguments as in shell_io. Builds and tests: tasks_run.",
	annotations: destructive,
	waits:       alwaysWaits,
	adjustInput: func(in map[string]any) {
		tightenOnly(in)
		// The wait arguments mean what they mean in shell_io, which says it once.
		for _, name := range []string{"waitFor", "idleMs", "timeoutMs"} {
			setAt(in, []string{name}, func(p map[string]any) { p["description"] = "As in shell_io." })
		}
		setAt(in, []string{"screen"}, func(p map[string]any) { p["description"] = "As in shell_io." })
	},
	adjustOutput: func(out map[string]any) {
		// The fields of a read are described once, in shell_io's output schema: a client
		// reads these bytes at the start of every conversation (the 24 KiB budget).
		for name, p := range out["properties"].(map[string]any) {
			if name != "sandbox" && name != "withheldEnv" {
				delete(p.(map[string]any), "description")
			}
		}
	},
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a openArgs) (openResult, string, error) {
		r, clamped, err := s.readOptions(a.readArgs)
		if err != nil {
			return openResult{}, "", err
		}
		r.WaitPort = a.WaitPort
		policy, err := s.narrow(a.sandboxArgs)
		if err != nil {
			return openResult{}, "", err
		}
		// Held open until the program has started in it, so a path swapped after the check
		// cannot move the program out of the workspace (workspace.Dir).
		dir, err := s.ws.OpenDir(a.Cwd)
		if err != nil {
			return openResult{}, "", err
		}
		o := pty.OpenOptions{Command: a.Command, Dir: dir.Path, EnterDir: dir.ExecPath(), DirFile: dir.File(), Env: a.Env,
			Cols: orZero(a.Cols), Rows: orZero(a.Rows), Name: a.Name, NoIntegration: a.Integration != nil && !*a.Integration,
			Sandbox: &policy}
		res, err := s.sessions(ctx).Open(ctx, o, r)
		dir.Close()
		if err != nil {
			return openResult{}, "", err
		}
		out, text := s.shapeRead(res, clamped)
		withheld := s.withheldEnv(a.Env)
		head, rest, _ := strings.Cut(text, "\n")
		text = head + "\n" + sandboxLine(policy, withheld) + "\n" + rest + s.failureHint(res)
		return openResult{readResult: out, Sandbox: policy, WithheldEnv: withheld}, text, nil
	},
}

type openArgs struct {
	Command string            `json:"command,omitempty" jsonschema:"Run with sh -c. Default: an interactive $SHELL."`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"Relative to the workspace root."`
	Env     map[string]string `json:"env,omitempty" jsonschema:"Extra environment variables."`
	Name    string            `json:"name,omitempty" jsonschema:"A label."`
	// Integration is on unless false is given.
	Integration *bool `json:"integration,omitempty" jsonschema:"Default true; run needs it."`
	WaitPort    int   `json:"waitPort,omitempty" jsonschema:"End when this TCP port listens." toolschema:"minimum=1,maximum=65535"`
	sandboxArgs
	termSize
	readArgs
}

// openResult is shell_open's result: a read, as shell_io's (a type of its own, so
// what shell_open alone may report has a place).
type openResult struct {
	readResult
	Sandbox     sandbox.Policy `json:"sandbox" jsonschema:"What confines the program."`
	WithheldEnv []string       `json:"withheldEnv" jsonschema:"Names of the server's variables it did not inherit."`
}
