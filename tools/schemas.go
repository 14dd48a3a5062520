package tools

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/toolschema"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// The tools' schemas are derived from their argument and result types (internal/toolschema):
// descriptions are the types' jsonschema tags, and they are the documentation a model reads
// before every call, so they are worth composing; a pointer in a result is nullable; a typed
// word is an enum of its constants. What the types cannot say, a tool's adjust functions
// add.

// deriver derives every tool's schemas, with a rule for each typed word the arguments and
// results hold.
var deriver = toolschema.New(
	toolschema.Enum(tasks.States()),
	toolschema.Enum(tasks.GraphStates()),
	toolschema.Enum(tasks.Untils()),
	toolschema.Enum(tasks.Outcomes()),
	toolschema.Enum(tasks.Executors()),
	toolschema.Type[tasks.Time](toolschema.DateTime()),
	toolschema.Enum(pty.Reasons()),
	toolschema.Enum(pty.InputKinds()),
	toolschema.Enum(sandbox.Modes()),
	toolschema.Enum(sandbox.Networks()),
	toolschema.Enum([]signalName{"SIGHUP", "SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGUSR1", "SIGUSR2"}),
	screenRules[0], screenRules[1], // shell_io's screen argument and its colours (screen_styled.go)
)

// signalName is the signal shell_close sends first.
type signalName string

// Annotations as sent: only the hints that say more than MCP's defaults (not read-only,
// not idempotent, open world). A read-only tool's destructive and idempotent hints mean
// nothing (MCP); every tool that writes says whether it destroys, and every tool says it
// touches this machine only. TestTools_Contract and the golden schemas pin them.
var (
	readOnly    = mcp.ToolAnnotation{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)}
	destructive = mcp.ToolAnnotation{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
)

func ptr[T any](v T) *T { return &v }

// setAt changes the schema of the property at path (names, and "[]" for an array's
// items) in schema s; a path that is not there is a programming error.
func setAt(s map[string]any, path []string, change func(map[string]any)) {
	for _, step := range path {
		var next any
		if step == "[]" {
			next = s["items"]
		} else {
			props, _ := s["properties"].(map[string]any)
			next = props[step]
		}
		m, ok := next.(map[string]any)
		if !ok {
			panic(fmt.Sprintf("tools: no schema at %v", path))
		}
		s = m
	}
	change(s)
}

// enumOf lists the values a string property takes, and null too when it may be null:
// for a field the engine types as a plain string.
func enumOf(values ...string) func(map[string]any) {
	return func(p map[string]any) {
		list := make([]any, 0, len(values)+1)
		for _, v := range values {
			list = append(list, v)
		}
		if t, ok := p["type"].([]any); ok && len(t) == 2 && t[1] == "null" {
			list = append(list, nil)
		}
		p["enum"] = list
	}
}
