package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// tool is the declaration of one tool, all of it in one value: what a client learns of it
// (name, description, annotations, and the input and output schemas, derived from A and
// R), whether a call may wait, and what a call does. Each tool is one such value in a file
// of its own (shell_open.go, tasks_run.go, ...), listed once in declarations.
type tool[A, R any] struct {
	name        string
	description string
	annotations mcp.ToolAnnotation // as sent: only the hints that say more than MCP's defaults
	waits       waits
	// handle does the call once its arguments are decoded into A: it calls one engine
	// method and returns the structured result and the text a model reads. An error
	// becomes a coded tool result (toolError).
	handle func(s *Table, ctx context.Context, req mcp.CallToolRequest, args A) (R, string, error)
	// adjustInput and adjustOutput, if set, add to the derived schemas what Go types
	// cannot say (a pattern, the values of a field the engine types as a plain string).
	adjustInput, adjustOutput func(schema map[string]any)
}

// declaration is a tool of any argument and result types, as the table lists them.
type declaration interface {
	toolName() string
	waiting() waits
	// definition is the tool as tools/list sends it, its schemas derived.
	definition() (mcp.Tool, error)
	// bind makes the mcp-go tool that serves calls on s.
	bind(s *Table, def mcp.Tool) server.ServerTool
}

// declarations is the one list of the tools this server offers, in the order tools/list
// gives them.
var declarations = []declaration{
	shellOpen, shellIO, shellClose, shellList,
	tasksRun, tasksStatus, tasksList, tasksCancel, tasksGraph,
}

func (t tool[A, R]) toolName() string { return t.name }
func (t tool[A, R]) waiting() waits   { return t.waits }

func (t tool[A, R]) definition() (mcp.Tool, error) {
	in, err := deriver.InputFor(reflect.TypeFor[A]())
	if err != nil {
		return mcp.Tool{}, err
	}
	out, err := deriver.OutputFor(reflect.TypeFor[R]())
	if err != nil {
		return mcp.Tool{}, err
	}
	if t.adjustInput != nil {
		t.adjustInput(in)
	}
	if t.adjustOutput != nil {
		t.adjustOutput(out)
	}
	def := mcp.Tool{Name: t.name, Description: t.description, Annotations: t.annotations}
	// mcp-go sends RawInputSchema instead of InputSchema when it is set; InputSchema's
	// zero value then goes unsent.
	if def.RawInputSchema, err = json.Marshal(in); err != nil {
		return mcp.Tool{}, err
	}
	if def.RawOutputSchema, err = json.Marshal(out); err != nil {
		return mcp.Tool{}, err
	}
	return def, nil
}

// bind makes the mcp-go tool of t: the arguments are decoded into A (an unknown argument
// is refused with the list of valid ones) before the handler runs, and any error, from
// decoding or from the handler, is answered as an isError result that starts with its
// stable code and is logged under the tool's name. A call that comes while the server
// still opens its store waits for it (Table.ready); if that open found the database
// locked by another process, the call answers BUSY and the next one opens it again
// (Table.openFailure). Every result is bounded by --max-result on its way out
// (budget.go).
func (t tool[A, R]) bind(s *Table, def mcp.Tool) server.ServerTool {
	return server.ServerTool{Tool: def, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.ready(ctx); err != nil {
			return s.openFailure(t.name, shutdownCause(ctx, err)), nil
		}
		var args A
		if err := decodeArgs(t.name, req, &args); err != nil {
			return s.toolError(t.name, err), nil
		}
		out, text, err := t.handle(s, ctx, req, args)
		if err != nil {
			return s.toolError(t.name, shutdownCause(ctx, err)), nil
		}
		if why := s.cfg.Sandbox.Degraded(); why != "" {
			text += "\nNote: " + why + "." // never silently unconfined: every result says so
		}
		return s.bound(t.name, mcp.NewToolResultStructured(out, text)), nil
	}}
}

// waits says whether a tool's calls may wait: for a terminal's output or exit, a graph's
// end, or a close's grace. Such calls count against the server's cap on waiting calls
// (protocol.Config.MayWait). The zero value never waits.
type waits struct {
	always bool
	// whenPositive names an argument: a call waits when it is a positive number.
	whenPositive string
}

var (
	neverWaits  = waits{}
	alwaysWaits = waits{always: true}
)

func (w waits) may(args map[string]json.RawMessage) bool {
	if w.always {
		return true
	}
	if w.whenPositive == "" {
		return false
	}
	var n float64
	return json.Unmarshal(args[w.whenPositive], &n) == nil && n > 0
}

// byName finds a declaration by its tool's name.
func byName(name string) declaration {
	for _, d := range declarations {
		if d.toolName() == name {
			return d
		}
	}
	return nil
}

// MayWait reports whether a call of the tool with these arguments may wait
// (protocol.Config.MayWait). An unknown tool counts as waiting, the safe side.
func MayWait(name string, args map[string]json.RawMessage) bool {
	if d := byName(name); d != nil {
		return d.waiting().may(args)
	}
	return true
}

// ReadOnly reports whether the tool changes nothing (its readOnlyHint): the tools a
// principal that may only read is allowed to call over HTTP (protocol.HTTPConfig). An
// unknown tool is not read-only, the safe side.
func ReadOnly(name string) bool {
	for _, def := range definitions {
		if def.Name == name {
			return def.Annotations.ReadOnlyHint != nil && *def.Annotations.ReadOnlyHint
		}
	}
	return false
}

// WaitingCalls names the calls that may wait, for the BUSY answer (protocol.Config):
// "shell_open, shell_io, shell_close, tasks_status with waitMs".
var WaitingCalls = waitingCalls()

func waitingCalls() string {
	var names []string
	for _, d := range declarations {
		switch w := d.waiting(); {
		case w.always:
			names = append(names, d.toolName())
		case w.whenPositive != "":
			names = append(names, d.toolName()+" with "+w.whenPositive)
		}
	}
	return strings.Join(names, ", ")
}

// definitions are the tools as tools/list sends them, derived once: the declarations are
// the program's own, so a schema that cannot be derived is a programming error, which
// every test meets first.
var definitions = func() []mcp.Tool {
	defs := make([]mcp.Tool, len(declarations))
	for i, d := range declarations {
		def, err := d.definition()
		if err != nil {
			panic(err)
		}
		defs[i] = def
	}
	return defs
}()

// registry is the table's tools, ready for mcp-go.
func (s *Table) registry() []server.ServerTool {
	out := make([]server.ServerTool, len(declarations))
	for i, d := range declarations {
		out[i] = d.bind(s, s.linked(definitions[i]))
	}
	return out
}
