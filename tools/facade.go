package tools

// The facade is a small JSON-RPC layer between the client's stdio and mcp-go's stdio server.
// Every line the client sends passes through relay, every line mcp-go writes through Write.
//
// Always, it drops a notifications/progress whose request has already been answered (or
// cancelled): mcp-go writes notifications from a goroutine of its own, so without this a
// late one could follow its call's response on the wire.
//
// With --mcp-tasks it also serves the MCP Tasks extension (io.modelcontextprotocol/tasks,
// revision 2026-07-28, SEP-2663) over our task graphs, the tasks_* tools staying canonical:
//   - the extension is advertised in the server's capabilities.extensions;
//   - the response to a tools/call of tasks_run whose request declares the extension in
//     _meta["io.modelcontextprotocol/clientCapabilities"].extensions becomes a
//     CreateTaskResult (resultType "task") whose taskId is the graph id. tasks_run answers
//     once the graph is stored, so a tasks/get for it resolves at once. A refused graph
//     (isError) stays a plain tool result: there is no task to poll;
//   - tasks/get, tasks/update and tasks/cancel are answered here, never reaching mcp-go.
//
// mcp-go's own task machinery is not used: it implements the older 2025-11-25 tasks and
// cancels the handler's context once the task is created (mcp-go issue 897).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/tasks"
)

const (
	tasksExtension = "io.modelcontextprotocol/tasks"
	// codeMissingCapability is the extension's error for a tasks/* request that does not
	// declare the extension (MISSING_REQUIRED_CLIENT_CAPABILITY).
	codeMissingCapability = -32021
	// taskPollInterval is the pollIntervalMs we suggest: builds and test runs take seconds
	// to minutes, and a poll costs a read of the store.
	taskPollInterval = 2 * time.Second
)

// task is the extension's Task as tools/call (CreateTaskResult) and tasks/get
// (GetTaskResult) return it. ttlMs is always null: graphs are kept as records (retention
// archives their logs, never the graph), so a task never expires.
type task struct {
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

// response is a JSON-RPC response the facade writes.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// message is what the facade reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// call is a request mcp-go has not answered yet that the facade must remember.
type call struct {
	token string // its progress token (jsonKey), "" for none
	task  bool   // a tasks_run that declared the extension: answer with a task
}

type facade struct {
	s     *Server
	ctx   context.Context
	tasks bool // serve the extension (--mcp-tasks)

	in *io.PipeReader // what mcp-go reads

	mu      sync.Mutex // serialises writes to out; guards what follows
	out     io.Writer
	partial []byte          // the start of a line mcp-go has not finished writing
	calls   map[string]call // by request id (jsonKey)
	tokens  map[string]int  // progress tokens of unanswered requests
	closed  bool

	wg sync.WaitGroup // requests the facade answers itself
}

// newFacade puts a facade in front of out and, with --mcp-tasks, advertises the extension.
// It must run before mcp-go serves anything.
func (s *Server) newFacade(ctx context.Context, out io.Writer) *facade {
	if s.cfg.MCPTasks {
		server.WithExtensions(map[string]any{tasksExtension: map[string]any{}})(s.mcp)
	}
	return &facade{s: s, ctx: ctx, tasks: s.cfg.MCPTasks, out: out, calls: map[string]call{}, tokens: map[string]int{}}
}

// relay returns what mcp-go reads: the client's lines from in, less those the facade
// answers itself. It ends (EOF) when in does.
func (f *facade) relay(in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	f.in = pr
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 && !f.intercept(line) {
				if _, werr := pw.Write(line); werr != nil {
					return // mcp-go stopped reading
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// close waits for the requests the facade is answering; nothing is written after it. A
// relay still blocked reading the client's input ends when that input does.
func (f *facade) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	if f.in != nil {
		f.in.Close() // unblocks a relay waiting for mcp-go to read
	}
	f.wg.Wait()
}

// intercept notes what the facade must know of a client message and reports whether the
// facade answers it itself (then mcp-go never sees it).
func (f *facade) intercept(line []byte) bool {
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return false // mcp-go answers what does not parse; responses to our requests pass
	}
	params := members(m.Params)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return true
	}
	id, isRequest := jsonKey(m.ID)
	switch {
	case m.Method == "notifications/cancelled":
		if reqID, ok := jsonKey(params["requestId"]); ok {
			f.answeredLocked(reqID) // no progress after a cancel either
		}
	case !isRequest: // another notification: nothing to note
	case f.tasks && (m.Method == "tasks/get" || m.Method == "tasks/update" || m.Method == "tasks/cancel"):
		// (tasks/list and tasks/result, of the older revision, go on to mcp-go, which refuses them.)
		f.wg.Go(func() {
			result, rerr := f.handle(m.Method, m.Params)
			f.reply(m.ID, result, rerr)
		})
		return true
	default:
		meta := members(params["_meta"])
		token, hasToken := jsonKey(meta["progressToken"])
		var name string
		_ = json.Unmarshal(params["name"], &name)
		asTask := f.tasks && m.Method == "tools/call" && name == "tasks_run" && declaresTasks(meta)
		if hasToken || asTask {
			f.answeredLocked(id) // a reused id: forget the old call
			f.calls[id] = call{token: token, task: asTask}
			if hasToken {
				f.tokens[token]++
			}
		}
	}
	return false
}

// answeredLocked forgets a request: its progress notifications are dropped from now on.
func (f *facade) answeredLocked(id string) (call, bool) {
	c, ok := f.calls[id]
	if !ok {
		return call{}, false
	}
	delete(f.calls, id)
	if c.token != "" {
		if f.tokens[c.token]--; f.tokens[c.token] <= 0 {
			delete(f.tokens, c.token)
		}
	}
	return c, true
}

var progressMethod = []byte(`"notifications/progress"`)

// Write takes what mcp-go writes to the client, line by line: it drops progress
// notifications of answered requests and turns a task call's response into a task.
func (f *facade) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return len(p), nil // Listen has returned: a straggling notification goes nowhere
	}
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		line := f.filterLocked(f.partial[:i+1])
		f.partial = f.partial[i+1:]
		if line == nil {
			continue
		}
		if _, err := f.out.Write(line); err != nil {
			return 0, err
		}
	}
	f.partial = append([]byte(nil), f.partial...) // don't pin a big buffer
	return len(p), nil
}

// filterLocked is what becomes of a line mcp-go writes: itself, another line, or nil.
func (f *facade) filterLocked(line []byte) []byte {
	if len(f.calls) == 0 && !bytes.Contains(line, progressMethod) {
		return line // the usual case: nothing to look at
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	if m.Method == "notifications/progress" {
		if token, _ := jsonKey(members(m.Params)["progressToken"]); f.tokens[token] == 0 {
			f.s.log.Debug("dropped a progress notification of an answered request", "progressToken", token)
			return nil
		}
		return line
	}
	id, ok := jsonKey(m.ID)
	if m.Method != "" || !ok {
		return line
	}
	if c, ok := f.answeredLocked(id); ok && c.task {
		return f.asTask(m, line)
	}
	return line
}

// asTask rewrites the response to a tasks_run call as a CreateTaskResult; a refused
// graph's response (isError) stays as it is.
func (f *facade) asTask(m message, line []byte) []byte {
	var res struct {
		Meta              json.RawMessage `json:"_meta"`
		IsError           bool            `json:"isError"`
		StructuredContent struct {
			GraphID string `json:"graphId"`
		} `json:"structuredContent"`
	}
	if json.Unmarshal(m.Result, &res) != nil || res.IsError || res.StructuredContent.GraphID == "" {
		return line
	}
	snap, err := f.s.tasks.Snapshot(f.ctx, res.StructuredContent.GraphID)
	if err != nil {
		f.s.log.Warn("tasks_run answered as a tool result: cannot read the graph back", "graph", res.StructuredContent.GraphID, "err", err)
		return line
	}
	t := taskOf(snap)
	t.ResultType, t.Meta = "task", res.Meta
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: m.ID, Result: t})
	if err != nil {
		return line
	}
	return append(b, '\n')
}

// reply writes the facade's answer to a request.
func (f *facade) reply(id json.RawMessage, result any, rerr *rpcError) {
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: id, Result: result, Error: rerr})
	if err != nil {
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.out.Write(append(b, '\n')); err != nil {
		f.s.log.Warn("write response", "err", err)
	}
}

// handle answers tasks/get, tasks/update and tasks/cancel.
func (f *facade) handle(method string, raw json.RawMessage) (any, *rpcError) {
	params := members(raw)
	if params == nil {
		return nil, invalidParams("%s: params must be an object with a taskId", method)
	}
	if !declaresTasks(members(params["_meta"])) {
		return nil, &rpcError{
			Code: codeMissingCapability,
			Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension declared in params._meta[%q].extensions",
				method, tasksExtension, mcp.MetaKeyClientCapabilities),
			Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}},
		}
	}
	var id string
	switch rawID, ok := params["taskId"]; {
	case !ok:
		return nil, invalidParams("%s: params.taskId is required: the taskId a tools/call of tasks_run returned", method)
	case json.Unmarshal(rawID, &id) != nil:
		return nil, invalidParams("%s: params.taskId must be a string, not %s", method, rawID)
	case id == "":
		return nil, invalidParams("%s: params.taskId is empty: give the taskId a tools/call of tasks_run returned", method)
	}
	if method == "tasks/update" {
		if members(params["inputResponses"]) == nil {
			return nil, invalidParams("tasks/update: params.inputResponses must be an object of responses keyed like inputRequests (this server never asks for input, so {} will do)")
		}
	}
	var err error
	if method == "tasks/cancel" {
		_, err = f.s.tasks.Cancel(f.ctx, id, nil, defaultCancelMs*time.Millisecond)
	} else {
		var snap tasks.Snapshot
		if snap, err = f.s.tasks.Snapshot(f.ctx, id); err == nil && method == "tasks/get" {
			return f.get(snap)
		}
		// tasks/update: we never ask for input, so no response is outstanding; acknowledge.
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		return nil, invalidParams("%s: task not found: %q (a taskId is the graphId tasks_run returned)", method, id)
	case err != nil:
		f.s.log.Error("tasks extension", "method", method, "task", id, "err", err)
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: %v", method, err)}
	}
	return map[string]any{"resultType": "complete"}, nil
}

// get is the GetTaskResult of a graph: a completed task carries the tasks_status result
// inline, marked isError when the graph failed.
func (f *facade) get(snap tasks.Snapshot) (any, *rpcError) {
	t := taskOf(snap)
	t.ResultType = "complete"
	if t.Status == "completed" {
		req := mcp.CallToolRequest{}
		req.Params.Name = "tasks_status"
		res, err := f.s.tasksStatus(f.ctx, req, statusArgs{GraphID: snap.Graph.ID})
		if err != nil {
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "tasks/get: cannot read the graph's result: " + err.Error()}
		}
		res.IsError = snap.Progress().State() == tasks.GraphFailed
		t.Result = res
	}
	return t, nil
}

// taskOf describes a graph as a Task. Its id is the graph id; a running graph is working,
// a cancelled one cancelled, any other finished one completed (a failed graph too: the
// extension's failed status is for JSON-RPC errors only).
func taskOf(snap tasks.Snapshot) task {
	p := snap.Progress()
	status := p.State()
	t := task{TaskID: snap.Graph.ID, Status: "completed", CreatedAt: timestamp(snap.Graph.CreatedAt),
		PollIntervalMs: taskPollInterval.Milliseconds()}
	switch status {
	case tasks.GraphRunning:
		t.Status = "working"
	case tasks.GraphCancelled:
		t.Status = "cancelled"
	}
	last := snap.Graph.CreatedAt
	later := func(at *time.Time) {
		if at != nil && at.After(last) {
			last = *at
		}
	}
	later(snap.Graph.FinishedAt)
	for _, r := range snap.Tasks {
		later(r.StartedAt)
		later(r.FinishedAt)
	}
	t.LastUpdatedAt = timestamp(last)

	t.StatusMessage = fmt.Sprintf("graph %s: %d/%d tasks done", status, p.Done(), p.Total)
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{p.Failed, "failed"}, {p.Cancelled, "cancelled"}, {p.Skipped, "skipped"}, {p.Running, "running"}, {p.Pending, "pending"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) > 0 {
		t.StatusMessage += " (" + strings.Join(parts, ", ") + ")"
	}
	return t
}

// declaresTasks reports whether a request's _meta declares the extension:
// _meta["io.modelcontextprotocol/clientCapabilities"].extensions["io.modelcontextprotocol/tasks"]
// is an object (the extension defines no settings: {} declares it).
func declaresTasks(meta map[string]json.RawMessage) bool {
	exts := members(members(meta[mcp.MetaKeyClientCapabilities])["extensions"])
	return members(exts[tasksExtension]) != nil
}

// members decodes a JSON object's members; nil when raw is not an object.
func members(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// jsonKey is a request id or progress token (a string or a number) as a map key: the same
// for the client's spelling and mcp-go's (5, 5.0 and 5e0 are one id).
func jsonKey(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v.(type) {
	case string, float64:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
	return "", false
}

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf(format, args...)}
}
