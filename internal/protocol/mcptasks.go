package protocol

// The MCP Tasks extension (io.modelcontextprotocol/tasks, revision 2026-07-28, SEP-2663),
// served over the server's own long-running work (task graphs), its tools staying
// canonical:
//   - the extension is advertised in the server's capabilities.extensions;
//   - a client declares the extension in initialize's capabilities.extensions, for the
//     whole session, or in a request's
//     _meta["io.modelcontextprotocol/clientCapabilities"].extensions, for that request;
//   - the response to a tools/call of TasksExtension.Tool from a client that declared the
//     extension becomes a CreateTaskResult (resultType "task") whose taskId is the id the
//     tool returned (TasksExtension.IDField of its structuredContent). The tool answers
//     once its work is stored, so a tasks/get for it resolves at once. A refused call
//     (isError) stays a plain tool result: there is no task to poll;
//   - tasks/get, tasks/update and tasks/cancel are answered here, never reaching mcp-go.
//
// mcp-go's own task machinery is not used: it implements the older 2025-11-25 tasks and
// cancels the handler's context once the task is created (mcp-go issue 897).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

const (
	tasksExtension = "io.modelcontextprotocol/tasks"
	// codeMissingCapability is the extension's error for a tasks/* request that does not
	// declare the extension (MISSING_REQUIRED_CLIENT_CAPABILITY).
	codeMissingCapability = -32021
)

// TasksExtension is what serving the MCP Tasks extension takes.
type TasksExtension struct {
	Store TaskStore
	// Tool is the tool whose calls become tasks, and IDField the member of its
	// structuredContent that holds the task's id.
	Tool, IDField string
}

// TaskStore reads and cancels the work the extension's tasks stand for.
type TaskStore interface {
	// Ready waits until the store can be read, or returns why not: ctx's error, or one
	// with a Busy() bool method that says true when another process holds the store's
	// lock for now. It is the one wait of the extension's methods that can be long.
	Ready(ctx context.Context) error
	// Task describes the task id; with withResult, a completed one carries its result
	// inline (tasks/get). An unknown id is ErrTaskNotFound.
	Task(ctx context.Context, id string, withResult bool) (Task, error)
	// Cancel cancels the task id; an unknown id is ErrTaskNotFound.
	Cancel(ctx context.Context, id string) error
}

// ErrTaskNotFound is a TaskStore's error for an id it does not know.
var ErrTaskNotFound = errors.New("task not found")

// Task is the extension's Task as tools/call (CreateTaskResult) and tasks/get
// (GetTaskResult) return it. ttlMs is always null: the work is kept as a record, so a
// task never expires.
type Task struct {
	Meta           json.RawMessage     `json:"_meta,omitempty"` // kept from the tool result
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"` // working, completed or cancelled
	StatusMessage  string              `json:"statusMessage"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          *int64              `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs"`
	Result         *mcp.CallToolResult `json:"result,omitempty"` // tasks/get of a completed task
}

// asTask rewrites the response to a call of the extension's tool as a CreateTaskResult; a
// refused call's response (isError) stays as it is.
func (s *Session) asTask(line []byte) []byte {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	var res struct {
		Meta              json.RawMessage            `json:"_meta"`
		IsError           bool                       `json:"isError"`
		StructuredContent map[string]json.RawMessage `json:"structuredContent"`
	}
	var id string
	if json.Unmarshal(m.Result, &res) != nil || res.IsError || json.Unmarshal(res.StructuredContent[s.cfg.Tasks.IDField], &id) != nil || id == "" {
		return line
	}
	t, err := s.cfg.Tasks.Store.Task(s.ctx, id, false)
	if err != nil {
		s.log.Warn(s.cfg.Tasks.Tool+" answered as a tool result: cannot read its task back", "task", id, "err", err)
		return line
	}
	t.ResultType, t.Meta = "task", res.Meta
	return encodeResponse(m.ID, t, nil)
}

// handle answers tasks/get, tasks/update and tasks/cancel. ctx is the request's own (see
// goAnswer): it ends the wait for the store's open, the one wait here that can be long
// (another process holding the database's lock). What follows is short, and runs to its
// end in the session's context, so a request read just before the input ends is still served.
func (s *Session) handle(ctx context.Context, method string, raw json.RawMessage) (any, *rpcError) {
	params := members(raw)
	if params == nil {
		return nil, invalidParams("%s: params must be an object with a taskId", method)
	}
	s.mu.Lock()
	declared := s.declaresLocked(members(params["_meta"]))
	s.mu.Unlock()
	if !declared {
		return nil, &rpcError{
			Code: codeMissingCapability,
			Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension declared in initialize's capabilities.extensions or in params._meta[%q].extensions",
				method, tasksExtension, mcp.MetaKeyClientCapabilities),
			Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}},
		}
	}
	var id string
	switch rawID, ok := params["taskId"]; {
	case !ok:
		return nil, invalidParams("%s: params.taskId is required: the taskId a tools/call of %s returned", method, s.cfg.Tasks.Tool)
	case json.Unmarshal(rawID, &id) != nil:
		return nil, invalidParams("%s: params.taskId must be a string, not %s", method, rawID)
	case id == "":
		return nil, invalidParams("%s: params.taskId is empty: give the taskId a tools/call of %s returned", method, s.cfg.Tasks.Tool)
	}
	if method == "tasks/update" {
		if members(params["inputResponses"]) == nil {
			return nil, invalidParams("tasks/update: params.inputResponses must be an object of responses keyed like inputRequests (this server never asks for input, so {} will do)")
		}
	}
	store := s.cfg.Tasks.Store
	if err := store.Ready(ctx); err != nil {
		var busy interface{ Busy() bool }
		if errors.Is(err, context.Canceled) {
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: not done: the request was cancelled, or the server is shutting down, before it could open the workspace's state", method)}
		}
		if errors.As(err, &busy) && busy.Busy() {
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: another process holds the workspace database's write lock, so this server could not open its state yet; try again once it lets go", method)}
		}
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: this server could not open the workspace's state: %v", method, err)}
	}
	var err error
	switch method {
	case "tasks/cancel":
		err = store.Cancel(s.ctx, id)
	case "tasks/get":
		var t Task
		if t, err = store.Task(s.ctx, id, true); err == nil {
			t.ResultType = "complete"
			return t, nil
		}
	default:
		// tasks/update: we never ask for input, so no response is outstanding; acknowledge.
		_, err = store.Task(s.ctx, id, false)
	}
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return nil, invalidParams("%s: task not found: %s (a taskId is the %s %s returned)", method, quote.Short(id), s.cfg.Tasks.IDField, s.cfg.Tasks.Tool)
	case err != nil:
		s.log.Error("tasks extension", "method", method, "task", id, "err", err)
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: %v", method, err)}
	}
	return map[string]any{"resultType": "complete"}, nil
}

// declaresLocked reports whether the client declared the extension for a request with
// this _meta: at initialize, for the whole session, or in the request itself. s.mu is
// held.
func (s *Session) declaresLocked(meta map[string]json.RawMessage) bool {
	return s.declared || declaresTasks(meta)
}

// declaresTasks reports whether a request's _meta declares the extension:
// _meta["io.modelcontextprotocol/clientCapabilities"].extensions["io.modelcontextprotocol/tasks"]
// is an object (the extension defines no settings: {} declares it).
func declaresTasks(meta map[string]json.RawMessage) bool {
	exts := members(members(meta[mcp.MetaKeyClientCapabilities])["extensions"])
	return members(exts[tasksExtension]) != nil
}
