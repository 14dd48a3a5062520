package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/pty"
)

// shellOpen is shell_open: start a program under a new terminal and read its first output.
var shellOpen = tool[openArgs, openResult]{
	name: "shell_open",
	description: "Start a program (default: a shell) in a terminal kept between calls, for shells, REPLs, dev servers, prompts and TUIs; " +
		"returns its first output and a sessionId. Size and wait arguments as in shell_io. For builds and tests use tasks_run.",
	annotations: destructive,
	waits:       alwaysWaits,
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a openArgs) (openResult, string, error) {
		r, clamped, err := s.readOptions(a.readArgs)
		if err != nil {
			return openResult{}, "", err
		}
		r.WaitPort = a.WaitPort
		// Held open until the program has started in it, so a path swapped after the check
		// cannot move the program out of the workspace (workspace.Dir).
		dir, err := s.ws.OpenDir(a.Cwd)
		if err != nil {
			return openResult{}, "", err
		}
		o := pty.OpenOptions{Command: a.Command, Dir: dir.Path, EnterDir: dir.ExecPath(), Env: a.Env,
			Cols: orZero(a.Cols), Rows: orZero(a.Rows), Name: a.Name, NoIntegration: a.Integration != nil && !*a.Integration}
		res, err := s.shells.Open(ctx, o, r)
		dir.Close()
		if err != nil {
			return openResult{}, "", err
		}
		out, text := shapeRead(res, clamped)
		return openResult{readResult: out}, text, nil
	},
}

type openArgs struct {
	Command string            `json:"command,omitempty" jsonschema:"Run with sh -c. Default: an interactive $SHELL."`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"Relative to the workspace root."`
	Env     map[string]string `json:"env,omitempty" jsonschema:"Extra environment variables."`
	Name    string            `json:"name,omitempty" jsonschema:"A label."`
	// Integration is on unless false is given.
	Integration *bool `json:"integration,omitempty" jsonschema:"Default true; run needs it."`
	WaitPort    int   `json:"waitPort,omitempty" jsonschema:"End the wait when this TCP port listens." toolschema:"minimum=1,maximum=65535"`
	termSize
	readArgs
}

// openResult is shell_open's result: a read, as shell_io's (a type of its own, so
// what shell_open alone may report has a place).
type openResult struct {
	readResult
}
