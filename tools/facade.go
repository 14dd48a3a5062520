package tools

// The facade is a small JSON-RPC layer between the client's stdio and mcp-go's stdio server.
// Every line the client sends passes through read and route, every line mcp-go writes
// through Write. It does what mcp-go's stdio server does not, or not as the spec and the
// tool contract want:
//
//   - Input is read in lines of at most maxLineBytes: an oversized message is answered with
//     a JSON-RPC error and skipped without being held whole (lines.go). A last line without
//     a newline is a message too (mcp-go drops it).
//   - Before initialize, only initialize and ping are served; any other request gets a
//     JSON-RPC error (-32600). A request of the 2026-07-28 revision, which carries its
//     protocol version in _meta and needs no handshake, is served.
//   - tools/call requests are run here, each on its own goroutine, through mcp-go's
//     MCPServer.HandleMessage (dispatch.go), never on mcp-go's worker pool: there a call
//     that waits holds one of at most 100 workers, quick calls queue behind waits, and once
//     its queue is full mcp-go reads no more input, not even a cancellation or the end of
//     stdin. The reader never blocks on a call, and calls that wait are capped (BUSY).
//   - notifications/cancelled ends the call it names at once, and the call gets no
//     response, as the spec says; nothing is logged as an error.
//   - A notifications/progress whose request has already been answered (or cancelled) is
//     dropped: mcp-go writes notifications from a goroutine of its own, so without this a
//     late one could follow its call's response on the wire.
//
// With --mcp-tasks it also serves the MCP Tasks extension (io.modelcontextprotocol/tasks,
// revision 2026-07-28, SEP-2663) over our task graphs, the tasks_* tools staying canonical:
//   - the extension is advertised in the server's capabilities.extensions;
//   - a client declares the extension in initialize's capabilities.extensions, for the
//     whole session, or in a request's
//     _meta["io.modelcontextprotocol/clientCapabilities"].extensions, for that request;
//   - the response to a tools/call of tasks_run from a client that declared the extension
//     becomes a CreateTaskResult (resultType "task") whose taskId is the graph id. tasks_run answers
//     once the graph is stored, so a tasks/get for it resolves at once. A refused graph
//     (isError) stays a plain tool result: there is no task to poll;
//   - tasks/get, tasks/update and tasks/cancel are answered here, never reaching mcp-go.
//
// mcp-go's own task machinery is not used: it implements the older 2025-11-25 tasks and
// cancels the handler's context once the task is created (mcp-go issue 897).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/quote"
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

// rpcMessage is what the facade reads of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// call is a request not answered yet that the facade must remember: a request it runs (a
// tools/call, or with --mcp-tasks a tasks/get, tasks/update or tasks/cancel), or a request
// for mcp-go that carries a progress token.
type call struct {
	token string // its progress token (jsonKey), "" for none
	task  bool   // a tasks_run that declared the extension: answer with a task

	// Of a request the facade runs (cancel is set):
	cancel    context.CancelFunc // ends it: notifications/cancelled, or the end of input
	cancelled bool               // the client cancelled it: it gets no response

	// Of a tools/call (tool is true):
	tool bool
	wait bool // it counts against Config.MaxWaits
}

type facade struct {
	s     *Server
	ctx   context.Context
	tasks bool // serve the extension (--mcp-tasks)

	in *io.PipeReader // what mcp-go reads

	// callCtx is what the requests the facade runs derive from: mcp-go's context with
	// its stdio session (progress notifications go through it), set by start.
	// cancelCalls ends them all: the end of input ends them at once, whatever they wait
	// for (the store's open, with another process holding its lock, can take many
	// busy timeouts).
	callCtx     context.Context
	cancelCalls context.CancelFunc

	// wmu serialises writes to out with the decisions that go with them (is the call
	// answered, is this progress late), so lines reach the wire in the order decided. It
	// is taken before mu, and never by route: a client slow to read its output does not
	// stop the facade from reading a cancellation or the end of input.
	wmu     sync.Mutex
	out     io.Writer
	partial []byte // the start of a line mcp-go has not finished writing; under wmu

	mu          sync.Mutex       // guards what follows
	calls       map[string]*call // by request id (jsonKey)
	tokens      map[string]int   // progress tokens of unanswered requests
	initialized bool             // an initialize request has come
	declared    bool             // initialize declared the Tasks extension: for the whole session
	running     int              // tools/calls in flight
	waiting     int              // of which may wait
	stopping    bool             // the input ended or Listen is returning: start nothing new
	closed      bool             // Listen has returned: write nothing
	listID      string           // a tools/list not answered yet: its answer starts the store's open

	wg sync.WaitGroup // the requests the facade answers itself (Add under mu, while !stopping)
}

// newFacade puts a facade in front of out and, with --mcp-tasks, advertises the extension.
// It must run before mcp-go serves anything.
func (s *Server) newFacade(ctx context.Context, out io.Writer) *facade {
	if s.cfg.MCPTasks {
		server.WithExtensions(map[string]any{tasksExtension: map[string]any{}})(s.mcp)
	}
	f := &facade{s: s, ctx: ctx, tasks: s.cfg.MCPTasks, out: out, calls: map[string]*call{}, tokens: map[string]int{}}
	f.callCtx, f.cancelCalls = context.WithCancel(ctx)
	return f
}

// listen runs mcp-go's stdio server behind the facade f until in ends or ctx is cancelled
// (see Server.Listen).
func (s *Server) listen(ctx context.Context, in io.Reader, f *facade) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	pr, pw := io.Pipe()
	f.in = pr
	// mcp-go registers its stdio session, then calls the context func: the facade starts
	// reading there, so the tool calls it runs carry that session.
	stdio.SetContextFunc(func(sessionCtx context.Context) context.Context {
		f.start(sessionCtx, in, pw)
		return sessionCtx
	})
	err := stdio.Listen(ctx, pr, f)
	f.close()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// start begins reading the client's input from in, passing to w what mcp-go must see.
// sessionCtx is mcp-go's context for its stdio session: tool calls run in it.
func (f *facade) start(sessionCtx context.Context, in io.Reader, w *io.PipeWriter) {
	f.mu.Lock()
	f.cancelCalls()
	f.callCtx, f.cancelCalls = context.WithCancel(sessionCtx)
	f.mu.Unlock()
	go f.read(in, w)
}

// read routes the client's messages until its input ends. Nothing here waits for a call:
// a cancellation or the end of the input is always read at once. At the end, the calls
// still running are cancelled and answered before mcp-go is told (it then stops and
// Listen returns).
func (f *facade) read(in io.Reader, w *io.PipeWriter) {
	lr := newLineReader(in, maxLineBytes)
	for {
		line, err := lr.next()
		var long *lineTooLongError
		if errors.As(err, &long) {
			f.refuseLong(long)
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 && f.route(line) {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n') // mcp-go drops a line without one
			}
			if _, werr := w.Write(line); werr != nil {
				return // mcp-go stopped reading
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			} else {
				f.s.log.Warn("reading the client's input", "err", err)
			}
			f.stopCalls()
			w.CloseWithError(err)
			return
		}
	}
}

// close ends what the facade runs and waits for it; nothing is written after it. A read
// still blocked on the client's input (Listen returned on a signal) ends when that input
// does, writing nothing.
func (f *facade) close() {
	f.stopCalls()
	if f.in != nil {
		f.in.Close() // unblocks a read waiting for mcp-go to take a line
	}
	f.wmu.Lock()
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.wmu.Unlock()
}

// stopCalls cancels the calls in flight and waits until each has answered.
func (f *facade) stopCalls() {
	f.mu.Lock()
	f.stopping = true
	cancel := f.cancelCalls
	f.mu.Unlock()
	cancel()
	f.wg.Wait()
}

// route does what a client message asks of the facade and reports whether mcp-go must see
// it too.
func (f *facade) route(line []byte) bool {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return true // mcp-go answers what does not parse; responses to its requests pass
	}
	params := members(m.Params)
	id, isRequest := jsonKey(m.ID)
	if !isRequest && len(m.ID) > 0 && string(m.ID) != "null" {
		// mcp-go would run a tools/call with such an id on its own worker pool, where a
		// wait could hold up its reader, and ours behind it.
		f.reply(nil, nil, &rpcError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf("%s: the id must be a string or a number", quote.Short(m.Method))})
		return false
	}
	if !isRequest {
		if m.Method == "notifications/cancelled" {
			f.cancelled(params)
		}
		return true // mcp-go cancels its own requests, notes notifications/initialized
	}
	if rerr := f.admit(m.Method, params); rerr != nil {
		f.reply(m.ID, nil, rerr)
		return false
	}
	switch {
	case m.Method == "tools/call":
		f.dispatch(m, id, params, line)
		return false
	case f.tasks && (m.Method == "tasks/get" || m.Method == "tasks/update" || m.Method == "tasks/cancel"):
		// (tasks/list and tasks/result, of the older revision, go on to mcp-go, which refuses them.)
		f.goAnswer(id, func(ctx context.Context) (any, *rpcError) { return f.handle(ctx, m.Method, m.Params) }, m.ID)
		return false
	}
	meta := members(params["_meta"])
	if token, ok := jsonKey(meta["progressToken"]); ok {
		f.mu.Lock()
		f.trackLocked(id, &call{token: token})
		f.mu.Unlock()
	}
	if m.Method == "tools/list" {
		f.mu.Lock()
		f.listID = id
		f.mu.Unlock()
	}
	return true
}

// admit refuses a request that comes too early: before initialize, only initialize and
// ping are served (the spec's lifecycle), unless the request is of the 2026-07-28
// revision, which needs no handshake.
func (f *facade) admit(method string, params map[string]json.RawMessage) *rpcError {
	f.mu.Lock()
	defer f.mu.Unlock()
	if method == "initialize" {
		f.initialized = true
		// A client declares an extension once, in initialize's capabilities.extensions, and
		// may repeat it in a request's _meta: either holds (declaresLocked).
		exts := members(members(params["capabilities"])["extensions"])
		f.declared = members(exts[tasksExtension]) != nil
	}
	if f.initialized || method == "ping" || statelessRequest(params) {
		return nil
	}
	return &rpcError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf(
		"%s before initialize: the session is not initialized; send initialize first (then notifications/initialized), only ping is answered before it",
		quote.Short(method))}
}

// statelessRequest reports a request of the 2026-07-28 revision or later, which carries
// its protocol version in _meta instead of a handshake.
func statelessRequest(params map[string]json.RawMessage) bool {
	var version string
	_ = json.Unmarshal(members(params["_meta"])[mcp.MetaKeyProtocolVersion], &version)
	return mcp.IsModernProtocol(version)
}

// cancelled handles notifications/cancelled: a call the facade runs is ended now and will
// get no response; progress of the request stops either way.
func (f *facade) cancelled(params map[string]json.RawMessage) {
	id, ok := jsonKey(params["requestId"])
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.answeredLocked(id); ok && c.cancel != nil {
		c.cancelled = true
		c.cancel()
	}
}

// goAnswer answers the request id (rawID as the client sent it) on a goroutine the facade
// waits for, unless it is stopping. Like a tools/call, answer runs in a context of its
// own under callCtx: the end of input ends it (it is answered, then Listen returns), and
// so does notifications/cancelled (it is not answered).
func (f *facade) goAnswer(id string, answer func(context.Context) (any, *rpcError), rawID json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return
	}
	ctx, cancel := context.WithCancel(f.callCtx)
	c := &call{cancel: cancel}
	f.trackLocked(id, c)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer cancel()
		result, rerr := answer(ctx)
		b, err := json.Marshal(response{JSONRPC: "2.0", ID: rawID, Result: result, Error: rerr})
		if err != nil {
			b, _ = json.Marshal(response{JSONRPC: "2.0", ID: rawID, Error: &rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}})
		}
		f.write(id, c, append(b, '\n'))
	}()
}

// refuseLong answers a message over maxLineBytes, by its id when its first bytes hold one.
func (f *facade) refuseLong(e *lineTooLongError) {
	id, method := peekRequest(e.prefix)
	f.s.log.Warn("refused an oversized message", "bytes", e.size, "limit", maxLineBytes, "method", quote.Short(method))
	what := "a message"
	if method != "" {
		what = "a " + quote.Short(method) + " message"
	}
	f.reply(id, nil, &rpcError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf(
		"%s of %d bytes was refused: at most %d bytes are accepted per message; send less in one call (put a long input or script in a file in the workspace)",
		what, e.size, maxLineBytes)})
}

// trackLocked remembers an unanswered request, forgetting an older one with its id.
func (f *facade) trackLocked(id string, c *call) {
	f.answeredLocked(id)
	f.calls[id] = c
	if c.token != "" {
		f.tokens[c.token]++
	}
}

// answeredLocked forgets a request: its progress notifications are dropped from now on.
func (f *facade) answeredLocked(id string) (*call, bool) {
	c, ok := f.calls[id]
	if !ok {
		return nil, false
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

// Write takes what mcp-go writes to the client, line by line, and drops progress
// notifications of answered requests. Once the answer to a tools/list is out, the store
// starts opening (Server.startOpen): the client has what it waits for at its start.
func (f *facade) Write(p []byte) (int, error) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	var lines [][]byte
	listed := false
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return len(p), nil // Listen has returned: a straggling notification goes nowhere
	}
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		if line := f.filterLocked(f.partial[:i+1]); line != nil {
			lines = append(lines, line)
			if f.listID != "" && answers(line, f.listID) {
				f.listID, listed = "", true
			}
		}
		f.partial = f.partial[i+1:]
	}
	f.mu.Unlock()
	for _, line := range lines {
		if _, err := f.out.Write(line); err != nil {
			return 0, err
		}
	}
	f.partial = append([]byte(nil), f.partial...) // don't pin a big buffer
	if listed {
		f.s.startOpen()
	}
	return len(p), nil
}

// answers reports whether line is the response to the request id (a jsonKey).
func answers(line []byte, id string) bool {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil || m.Method != "" {
		return false
	}
	got, ok := jsonKey(m.ID)
	return ok && got == id
}

// filterLocked is what becomes of a line mcp-go writes: itself, or nil.
func (f *facade) filterLocked(line []byte) []byte {
	if len(f.calls) == 0 && !bytes.Contains(line, progressMethod) {
		return line // the usual case: nothing to look at
	}
	var m rpcMessage
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
	if id, ok := jsonKey(m.ID); ok && m.Method == "" {
		if c := f.calls[id]; c != nil && c.cancel == nil {
			f.answeredLocked(id)
		}
	}
	return line
}

// asTask rewrites the response to a tasks_run call as a CreateTaskResult; a refused
// graph's response (isError) stays as it is.
func (f *facade) asTask(line []byte) []byte {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
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
	f.writeLine(append(b, '\n'))
}

// writeLine writes one whole line to the client, unless Listen has returned.
func (f *facade) writeLine(line []byte) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return
	}
	if _, err := f.out.Write(line); err != nil {
		f.s.log.Warn("write response", "err", err)
	}
}

// handle answers tasks/get, tasks/update and tasks/cancel. ctx is the request's own (see
// goAnswer): it ends the wait for the store's open, the one wait here that can be long
// (another process holding the database's lock). What follows is short, and runs to its
// end in Listen's context, so a request read just before the input ends is still served.
func (f *facade) handle(ctx context.Context, method string, raw json.RawMessage) (any, *rpcError) {
	params := members(raw)
	if params == nil {
		return nil, invalidParams("%s: params must be an object with a taskId", method)
	}
	f.mu.Lock()
	declared := f.declaresLocked(members(params["_meta"]))
	f.mu.Unlock()
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
	if err := f.s.ready(ctx); err != nil {
		var busy *busyOpenError
		if errors.Is(err, context.Canceled) {
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: not done: the request was cancelled, or the server is shutting down, before it could open the workspace's state", method)}
		}
		if errors.As(err, &busy) {
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: another process holds the workspace database's write lock, so this server could not open its state yet; try again once it lets go", method)}
		}
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("%s: this server could not open the workspace's state: %v", method, err)}
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
		return nil, invalidParams("%s: task not found: %s (a taskId is the graphId tasks_run returned)", method, quote.Short(id))
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

// declaresLocked reports whether the client declared the extension for a request with
// this _meta: at initialize, for the whole session, or in the request itself. f.mu is
// held.
func (f *facade) declaresLocked(meta map[string]json.RawMessage) bool {
	return f.declared || declaresTasks(meta)
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
