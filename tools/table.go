// Package tools is the tool table of mcp-harness: the tools (their schemas, argument checks
// and result shapes), the map from engine errors to the stable error codes of the tool
// contract, and the bound every result is held to. The engines (pty, tasks, store) do the
// work and know nothing of MCP; a handler here decodes, validates, calls one engine method
// and shapes the result. The server that opens the store and starts the engines is
// internal/server; the JSON-RPC layer in front of mcp-go is internal/protocol.
package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/tasks"
)

//go:embed instructions.md
var instructions string

// Config is what the tools are told on the server's command line.
type Config struct {
	MaxWait   time.Duration // no call waits longer; longer timeoutMs/waitMs are clamped; 0 = 30s
	MaxResult int           // bytes of a result's text, and of its structuredContent as JSON; 0 = tasks.DefaultMaxResult
	Detach    bool          // tasks_run's default for detach
	Version   string        // the server's, in initialize's answer
	Logger    *slog.Logger
	// Sandbox confines what the tools start; nil confines nothing. WithheldEnv names the
	// variables of the server's environment that commands do not inherit.
	Sandbox     *sandbox.Launcher
	WithheldEnv []string
	// AnswerCommand is the command line a person runs to answer session id's question
	// from their terminal (mcp-harness answer, with the flags that find this workspace),
	// which a result waiting for a password tells the model to ask for; nil is
	// "mcp-harness answer <id>".
	AnswerCommand func(id string) string
	// NoUI offers no MCP Apps views (--no-ui): no ui:// resources, no _meta.ui on the
	// tools (ui.go).
	NoUI bool
}

// DefaultMaxWait is Config.MaxWait when it is 0: long enough for a build step or a dev
// server's start, short enough that a client's own request timeout never comes first.
const DefaultMaxWait = 30 * time.Second

// Table is the tool table on a workspace, bound to the engines its tools call: NewTable
// makes it and its mcp-go server, which answers initialize and tools/list at once; Start
// gives it the engines once the store is open.
type Table struct {
	cfg Config
	log *slog.Logger
	ws  *workspace.Workspace
	mcp *server.MCPServer

	// ready waits until the store is open and the engines are started (Start has run), or
	// says why they are not; every tool call waits for it first.
	ready func(context.Context) error

	// Set by Start, before ready first returns nil; read only after it did.
	shells *pty.Manager
	tasks  *tasks.Engine
}

// NewTable makes the tool table of workspace ws and the mcp-go server that offers it.
// ready is what a call waits for before it touches an engine (see bind).
func NewTable(cfg Config, ws *workspace.Workspace, ready func(context.Context) error) *Table {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Table{cfg: cfg, log: cfg.Logger, ws: ws, ready: ready}
	s.mcp = server.NewMCPServer("mcp-harness", cfg.Version,
		server.WithInstructions(instructions+"\n"+sandboxInstructions(cfg.Sandbox)+"\n"),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	s.mcp.AddTools(s.registry()...)
	s.offerViews()
	return s
}

// answerCommand is the command line a person runs to answer session id's question.
func (s *Table) answerCommand(id string) string {
	if s.cfg.AnswerCommand != nil {
		return s.cfg.AnswerCommand(id)
	}
	return "mcp-harness answer " + id
}

// Start gives the table the engines its tools call; it runs once, before ready first
// returns nil.
func (s *Table) Start(shells *pty.Manager, engine *tasks.Engine) {
	s.shells, s.tasks = shells, engine
}

// sessions is the terminal engine as the call's principal sees it (protocol.Principal):
// over HTTP a principal reaches only the sessions it opened, and another's are not there
// (NOT_FOUND); under stdio the one client reaches them all.
func (s *Table) sessions(ctx context.Context) pty.Owned {
	return s.shells.As(protocol.Principal(ctx))
}

// MCPServer is the mcp-go server that offers the tools.
func (s *Table) MCPServer() *server.MCPServer { return s.mcp }

// TasksExtension serves the MCP Tasks extension over the table's task graphs
// (mcptasks.go): a task is a graph, tasks_run's calls become tasks, and the task's id is
// the graphId of tasks_run's result.
func (s *Table) TasksExtension() *protocol.TasksExtension {
	return &protocol.TasksExtension{Store: graphTasks{s}, Tool: tasksRun.name, IDField: "graphId"}
}

// openFailure is the result of a tool call that ready refused. A held lock (an error with
// a Busy() bool method saying true) is BUSY: the same call works once the other process
// lets go, and the server tries the open again then. Anything else is INTERNAL and, unlike
// other internal errors, says why, since that is what the user has to fix (a database
// newer than this binary, a state directory that cannot be written); the server answers
// every call so until it is restarted.
func (s *Table) openFailure(tool string, err error) *mcp.CallToolResult {
	var busy interface{ Busy() bool }
	switch {
	case errors.As(err, &busy) && busy.Busy():
		return mcp.NewToolResultError(fmt.Sprintf("%s: %s failed: another process holds the workspace database's write lock (an operator's sqlite3 shell or a backup, say), so this server could not open its state yet; nothing was lost. Call again once that process lets go: the next call opens it.",
			codeBusy, tool))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, tasks.ErrClosed), errors.Is(err, protocol.ErrShuttingDown):
		return s.toolError(tool, err) // the call was cancelled, or the server is shutting down
	}
	return mcp.NewToolResultError(fmt.Sprintf("%s: %s failed: this server could not open the workspace's state, and answers no tool call: %v. Restart it once that is fixed.",
		codeInternal, tool, err))
}
