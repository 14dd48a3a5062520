// Package protocol is the JSON-RPC layer in front of mcp-go: the session of one client
// (Session: lifecycle checks, tools/call dispatch with may-wait admission and BUSY,
// cancellation, progress that never follows its response, the MCP Tasks extension) and
// the transports that carry its lines (stdio, and Streamable HTTP in http.go, whose
// requests each hand one message to a Session: an MCP session's, or for the stateless
// revision one made for the request). The session handles one message at a time
// and writes what it answers through an io.Writer, so that every transport shares it. It
// knows no tool: what it needs of the tool table (which calls may wait, which tool's calls
// become tasks) comes in through Config.
package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// A Session is one client's conversation with the server: every message the client sends
// passes through Handle, every line mcp-go writes for it through Write. It does what
// mcp-go's own serving does not, or not as the spec and the tool contract want:
//
//   - Before initialize, only initialize and ping are served; any other request gets a
//     JSON-RPC error (-32600). A request of the 2026-07-28 revision, which carries its
//     protocol version in _meta and needs no handshake, is served. A second initialize on
//     the connection is refused (-32600) and changes nothing; one that failed may be sent
//     again. Revision 2025-03-26 is not negotiated: its batches are not taken, so a client
//     asking for it (or for no version) is offered 2025-06-18 (ids.go).
//   - Ids are the client's, byte for byte: mcp-go decodes an id into a float64 or an
//     int64, which changes an integer past 2^53 and respells 1.0 or 1e3, so every request
//     reaches it with an id of the session's own (a wire id), and its response goes back
//     with the id the client sent (ids.go). Progress tokens likewise reach mcp-go as wire
//     tokens of the session's, and each notification gets its request's token back as
//     the client sent it, so two tokens one float64 apart stay two.
//     A request whose id is null, or neither a string nor a number, is refused (-32600,
//     id null).
//   - params that are not an object, and a tools/call whose arguments are not one, are
//     refused as invalid params (-32602), as is a request whose params mcp-go cannot
//     decode (it says -32600).
//   - tools/call requests are run here, each on its own goroutine, through mcp-go's
//     MCPServer.HandleMessage (dispatch.go), never on mcp-go's worker pool: there a call
//     that waits holds one of at most 100 workers, quick calls queue behind waits, and once
//     its queue is full mcp-go reads no more input, not even a cancellation or the end of
//     stdin. Handle never blocks on a call, and calls that wait are capped (BUSY).
//   - notifications/cancelled ends the call it names at once, and the call gets no
//     response, as the spec says; nothing is logged as an error.
//   - A notifications/progress whose request has already been answered (or cancelled) is
//     dropped: mcp-go writes notifications from a goroutine of its own, so without this a
//     late one could follow its call's response on the wire.
//
// With Config.Tasks it also serves the MCP Tasks extension (mcptasks.go).
//
// What a transport adds is how lines come and go: stdio (stdio.go) reads bounded lines
// and hands what Handle passes on to mcp-go's stdio server, whose output comes back
// through Write; HTTP (http.go) reads one message per request, hands what Handle passes
// on to mcp-go's MCPServer.HandleMessage itself, and routes what the session writes to
// the request it answers (by id) or reports on (by progress token).

const (
	// DefaultMaxWaits is Config.MaxWaits when it is 0: far more waits than an agent keeps
	// open (a few terminals, a graph or two), few enough that a runaway client is told
	// BUSY long before the server strains.
	DefaultMaxWaits = 256
	// maxCalls bounds all tool calls in flight, waiting or not: a client that pipelines
	// faster than calls finish gets BUSY rather than a goroutine per message.
	maxCalls = 1024
)

// Config is what a Session needs from the server it stands in front of.
type Config struct {
	// MCP answers what the session does not: initialize, tools/list, ping, and each
	// tools/call, which the session runs through MCP.HandleMessage.
	MCP    *server.MCPServer
	Logger *slog.Logger
	// MayWait reports whether a call of the tool with these arguments may wait (for a
	// terminal's output, a graph's end...): such calls count against MaxWaits. Nil: every
	// call may wait, the safe side.
	MayWait func(tool string, args map[string]json.RawMessage) bool
	// WaitingCalls names the calls that may wait, for the BUSY answer: it tells the
	// client which of its calls to have fewer of.
	WaitingCalls string
	MaxWaits     int // waiting tool calls in flight; more are answered BUSY; 0 = DefaultMaxWaits
	// Waits, if set, is the cap on waiting calls instead of MaxWaits, shared with other
	// sessions: an HTTP server gives all the sessions of one principal one Waits, so that
	// the cap holds however many sessions (or, in the stateless revision, requests) it
	// opens.
	Waits *Waits
	// Listed, if set, is called once the answer to the first tools/list is written: the
	// client then has what it waits for at its start, and the server can get on with
	// opening its store.
	Listed func()
	// Tasks, if set, serves the MCP Tasks extension (mcptasks.go).
	Tasks *TasksExtension
}

// response is a JSON-RPC response the session writes.
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

// rpcMessage is what the session reads of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// ErrShuttingDown is the cause (context.Cause) of the context of every request the
// session runs once the server shuts down: its input ended, or ServeStdio's context was
// cancelled (a signal). Such a request is still answered, and a tool tells a call cut
// short by the shutdown from a failure by this cause.
var ErrShuttingDown = errors.New("the server is shutting down")

// call is a request not answered yet that the session must remember: a request it runs (a
// tools/call, or with the Tasks extension a tasks/get, tasks/update or tasks/cancel), or a
// request it handed on to mcp-go (wire is set).
type call struct {
	id    json.RawMessage // the id as the client sent it
	spelt json.RawMessage // its progress token as the client sent it, nil for none
	token json.RawMessage // the wire token mcp-go knows spelt by (ids.go), nil for none
	wire  json.RawMessage // of a request handed on to mcp-go: the id mcp-go knows it by
	task  bool            // a call of the tasks tool that declared the extension: answer with a task

	// Of a request the session runs (cancel is set):
	cancel    context.CancelFunc // ends it: notifications/cancelled, or the end of input
	cancelled bool               // the client cancelled it: it gets no response

	// Of a tools/call (tool is true):
	tool bool
	wait bool // it counts against Config.MaxWaits
}

// Session is one client's session; see the top of this file. New makes one.
type Session struct {
	cfg Config
	log *slog.Logger
	ctx context.Context

	// callCtx is what the requests the session runs derive from: mcp-go's context with
	// its client session (progress notifications go through it), set by bindSession.
	// cancelCalls ends them all, with the cause ErrShuttingDown: the end of input ends
	// them at once, whatever they wait for (the store's open, with another process holding
	// its lock, can take many busy timeouts), and so does the end of the context they
	// come from (unwatch stops that watch).
	callCtx     context.Context
	cancelCalls context.CancelCauseFunc
	unwatch     func() bool

	// wmu serialises writes to out with the decisions that go with them (is the call
	// answered, is this progress late), so lines reach the wire in the order decided. It
	// is taken before mu, and never by Handle: a client slow to read its output does not
	// stop the session from reading a cancellation or the end of input.
	wmu     sync.Mutex
	out     io.Writer
	partial []byte // the start of a line mcp-go has not finished writing; under wmu

	mu          sync.Mutex            // guards what follows
	calls       map[string]*call      // by request id (idKey)
	progress    map[string]*call      // unanswered requests with a progress token, by wire token (idKey)
	wired       map[string]*forwarded // requests handed on to mcp-go, by wire id (idKey)
	lastWire    int64                 // the last wire id given
	initialized bool                  // an initialize request has come (and has not failed)
	declared    bool                  // initialize declared the Tasks extension: for the whole session
	running     int                   // tools/calls in flight
	waiting     int                   // of which may wait
	stopping    bool                  // the input ended or the transport is returning: start nothing new
	closed      bool                  // the transport has returned: write nothing

	wg sync.WaitGroup // the requests the session answers itself (Add under mu, while !stopping)
}

// New makes a session that writes to out, one whole line per Write, and, with
// Config.Tasks, advertises the extension on cfg.MCP. It must run before mcp-go serves
// anything. ctx is the session's: what it runs derives from it.
func New(ctx context.Context, cfg Config, out io.Writer) *Session {
	if cfg.Tasks != nil {
		DeclareExtension(cfg.MCP, tasksExtension, map[string]any{})
	}
	return newSession(ctx, cfg, out)
}

// newSession is New without advertising the Tasks extension, which a transport that makes
// many sessions on one mcp-go server does once.
func newSession(ctx context.Context, cfg Config, out io.Writer) *Session {
	if cfg.MaxWaits <= 0 {
		cfg.MaxWaits = DefaultMaxWaits
	}
	if cfg.Waits == nil {
		cfg.Waits = NewWaits(cfg.MaxWaits)
	}
	if cfg.MayWait == nil {
		cfg.MayWait = func(string, map[string]json.RawMessage) bool { return true }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Session{cfg: cfg, log: cfg.Logger, ctx: ctx, out: out, calls: map[string]*call{}, progress: map[string]*call{}, wired: map[string]*forwarded{}}
	s.deriveCallsLocked(ctx)
	return s
}

// bindSession makes the calls the session runs from now on carry sessionCtx, mcp-go's
// context for the client's session, through which their notifications go.
func (s *Session) bindSession(sessionCtx context.Context) {
	s.mu.Lock()
	s.unwatch()
	s.cancelCalls(ErrShuttingDown)
	s.deriveCallsLocked(sessionCtx)
	s.mu.Unlock()
}

// deriveCallsLocked makes callCtx carry parent's values, and end when parent does with
// the cause ErrShuttingDown rather than parent's own (a signal's context.Canceled).
func (s *Session) deriveCallsLocked(parent context.Context) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	s.callCtx, s.cancelCalls = ctx, cancel
	s.unwatch = context.AfterFunc(parent, func() { cancel(ErrShuttingDown) })
}

// InFlight reports the tool calls the session runs, and how many of them may wait.
func (s *Session) InFlight() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, s.waiting
}

// Wait waits until every request the session runs has been answered.
func (s *Session) Wait() { s.wg.Wait() }

// close ends what the session runs and waits for it; nothing is written after it.
func (s *Session) close() {
	s.stopCalls()
	s.wmu.Lock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wmu.Unlock()
}

// stopCalls cancels the calls in flight and waits until each has answered.
func (s *Session) stopCalls() {
	s.mu.Lock()
	s.stopping = true
	cancel := s.cancelCalls
	s.mu.Unlock()
	cancel(ErrShuttingDown)
	s.wg.Wait()
}

// Handle does what one client message asks of the session and returns what mcp-go must
// see of it, which the transport hands on, or nil. It never waits for a call to finish.
func (s *Session) Handle(line []byte) []byte {
	m, ok := readMessage(line)
	if !ok || m.Method == "" || len(m.Result) > 0 {
		return line // mcp-go answers what does not parse; responses to its requests pass
	}
	params := members(m.Params)
	id, isRequest := idKey(m.ID)
	if !isRequest {
		switch {
		case len(m.ID) == 0 || string(m.ID) == "null" && strings.HasPrefix(m.Method, "notifications/"):
			// A notification has no id; one sent with a null id is still taken as one
			// (mcp-go does too), not answered: nothing would read the answer.
			return s.notification(m.Method, params, line)
		case string(m.ID) == "null":
			s.reply(nil, nil, &rpcError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf(
				"%s: the id is null: a request's id must be a string or a number (MCP forbids null ids; a notification has no id member)", quote.Short(m.Method))})
			return nil
		}
		// mcp-go would run a tools/call with such an id on its own worker pool, where a
		// wait could hold up its reader, and ours behind it.
		s.reply(nil, nil, &rpcError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf("%s: the id must be a string or a number", quote.Short(m.Method))})
		return nil
	}
	if rerr := checkParams(m.Method, m.Params, params); rerr != nil {
		s.reply(m.ID, nil, rerr)
		return nil
	}
	if rerr := s.admit(m.Method, params); rerr != nil {
		s.reply(m.ID, nil, rerr)
		return nil
	}
	switch {
	case m.Method == "tools/call":
		s.dispatch(m, id, line)
		return nil
	case s.cfg.Tasks != nil && (m.Method == "tasks/get" || m.Method == "tasks/update" || m.Method == "tasks/cancel"):
		// (tasks/list and tasks/result, of the older revision, go on to mcp-go, which refuses them.)
		s.goAnswer(id, func(ctx context.Context) (any, *rpcError) { return s.handle(ctx, m.Method, m.Params) }, m.ID)
		return nil
	case m.Method == "initialize" && !statelessRequest(params):
		line = offerVersion(line, params)
	}
	return s.forward(id, &call{id: m.ID, spelt: requestToken(line)}, m.Method, line)
}

// notification handles a notification and returns what mcp-go must see of it. A
// notifications/cancelled ends the request it names: one the session runs now, and it
// gets no response; one mcp-go answers is cancelled there by its wire id, and its response
// is dropped. mcp-go never sees a client's request id, so it sees no other cancellation.
func (s *Session) notification(method string, params map[string]json.RawMessage, line []byte) []byte {
	if method != "notifications/cancelled" {
		return line // mcp-go notes notifications/initialized
	}
	id, ok := idKey(params["requestId"])
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[id]
	switch {
	case c == nil:
		return nil
	case c.wire != nil:
		f := s.wired[wireKey(c.wire)]
		if f == nil || f.method == "initialize" { // the spec: initialize is never cancelled
			return nil
		}
		f.cancelled = true
		s.answeredLocked(id)
		params["requestId"] = c.wire
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		if err != nil {
			return nil
		}
		return b
	case c.cancel != nil:
		s.answeredLocked(id)
		c.cancelled = true
		c.cancel()
	}
	return nil
}

// admit refuses a request that comes too early or too late: before initialize, only
// initialize and ping are served (the spec's lifecycle), unless the request is of the
// 2026-07-28 revision, which needs no handshake; once initialize has come, another is
// refused, so the negotiated version cannot change under the client.
func (s *Session) admit(method string, params map[string]json.RawMessage) *rpcError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if method == "initialize" && !statelessRequest(params) {
		if s.initialized {
			return &rpcError{Code: mcp.INVALID_REQUEST, Message: "initialize: this connection is already initialized; " +
				"a second initialize is refused and changes nothing, the version negotiated first stays (to negotiate again, start a new connection)"}
		}
		s.initialized = true
		// A client declares an extension once, in initialize's capabilities.extensions, and
		// may repeat it in a request's _meta: either holds (declaresLocked).
		exts := members(members(params["capabilities"])["extensions"])
		s.declared = members(exts[tasksExtension]) != nil
	}
	if s.initialized || method == "ping" || statelessRequest(params) {
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

// goAnswer answers the request id (rawID as the client sent it) on a goroutine the session
// waits for, unless it is stopping. Like a tools/call, answer runs in a context of its
// own under callCtx: the end of input ends it (it is answered, then the transport returns), and
// so does notifications/cancelled (it is not answered).
func (s *Session) goAnswer(id string, answer func(context.Context) (any, *rpcError), rawID json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return
	}
	ctx, cancel := context.WithCancel(s.callCtx)
	c := &call{id: rawID, cancel: cancel}
	s.trackLocked(id, c)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		result, rerr := answer(ctx)
		s.write(id, c, encodeResponse(rawID, result, rerr))
	}()
}

// trackLocked remembers an unanswered request, forgetting an older one with its id, and
// gives its progress token, if it has one, a wire token: its line must reach mcp-go
// withRequestToken(line, c.token).
func (s *Session) trackLocked(id string, c *call) {
	s.answeredLocked(id)
	s.calls[id] = c
	if c.spelt != nil {
		c.token = s.nextWireLocked()
		s.progress[wireKey(c.token)] = c
	}
}

// requestToken is the progress token of request line as the client spelt it, if it is
// one a notification can carry back (a string or a number); nil otherwise. mcp-go sends
// no progress for a null token, and what it sends for one of another kind is dropped.
func requestToken(line []byte) json.RawMessage {
	start, end, ok := requestTokenSpan(line)
	if !ok {
		return nil
	}
	if _, ok := idKey(line[start:end]); !ok {
		return nil
	}
	return slices.Clone(line[start:end])
}

// answeredLocked forgets a request: its progress notifications are dropped from now on.
func (s *Session) answeredLocked(id string) (*call, bool) {
	c, ok := s.calls[id]
	if !ok {
		return nil, false
	}
	delete(s.calls, id)
	if c.token != nil {
		delete(s.progress, wireKey(c.token))
	}
	return c, true
}

// Write takes what mcp-go writes to the client, line by line: it drops progress
// notifications of answered requests, and writes responses with the client's ids and
// notifications with its progress tokens (ids.go). Once the answer to a tools/list is out, it calls
// Config.Listed: the client has what it waits for at its start.
func (s *Session) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var lines [][]byte
	listed := false
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return len(p), nil // the transport has returned: a straggling notification goes nowhere
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line, list := s.filterLocked(s.partial[:i+1])
		if line != nil {
			lines = append(lines, line)
		}
		listed = listed || list
		s.partial = s.partial[i+1:]
	}
	s.mu.Unlock()
	for _, line := range lines {
		if _, err := s.out.Write(line); err != nil {
			return 0, err
		}
	}
	s.partial = append([]byte(nil), s.partial...) // don't pin a big buffer
	if listed && s.cfg.Listed != nil {
		s.cfg.Listed()
	}
	return len(p), nil
}

// filterLocked is what becomes of a line mcp-go writes: itself, the response to a request
// handed on to it with the client's id back, or nil; and whether it answers a tools/list.
func (s *Session) filterLocked(line []byte) (out []byte, listed bool) {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return line, false
	}
	if m.Method == "notifications/progress" {
		// Its token is a wire token (ids.go): the client gets its request's own back.
		start, end, ok := notificationTokenSpan(line)
		var c *call
		if ok {
			c = s.progress[wireKey(line[start:end])]
		}
		if c == nil {
			s.log.Debug("dropped a progress notification of an answered request", "progressToken", string(m.Params))
			return nil, false
		}
		return splice(line, start, end, c.spelt), false
	}
	f := s.wired[wireKey(m.ID)]
	if m.Method != "" || f == nil {
		return line, false
	}
	delete(s.wired, wireKey(m.ID))
	if s.calls[f.key] == f.c {
		s.answeredLocked(f.key)
	}
	if f.cancelled {
		return nil, false // the spec: a cancelled request gets no response
	}
	if f.method == "initialize" {
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(m.Result, &res) != nil || res.ProtocolVersion == "" {
			s.initialized, s.declared = false, false // it failed: the client may try again
		}
	}
	return restoreID(line, f.c.id, f.method), f.method == "tools/list"
}

// reply writes the session's answer to a request.
func (s *Session) reply(id json.RawMessage, result any, rerr *rpcError) {
	s.writeLine(encodeResponse(id, result, rerr))
}

// writeLine writes one whole line to the client, unless the transport has returned.
func (s *Session) writeLine(line []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	if _, err := s.out.Write(line); err != nil {
		s.log.Warn("write response", "err", err)
	}
}

// members returns a JSON object's members by name, of a name given twice the last, as
// encoding/json decodes them into a map; nil when raw is not an object. raw must be valid
// JSON (every message is checked whole when it is read: readMessage), and the values are
// raw's own bytes, not copies, so raw must not change while they are used: a tools/call's
// arguments are most of its line, megabytes for a big graph (issue 29).
func members(raw json.RawMessage) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if !walkMembers(raw, func(name string, vs, ve int) { m[name] = raw[vs:ve:ve] }) {
		return nil
	}
	return m
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool {
	i := skipSpace(raw, 0)
	return i < len(raw) && raw[i] == '{'
}

// readMessage reads a JSON-RPC message as json.Unmarshal would read it into an
// rpcMessage (member names in any case, of several the last), and reports false where
// that would fail: a line that is not valid JSON, not an object, or whose method is not a
// string. Its raw members are line's own bytes (see members): the line is checked once
// and scanned once, not decoded, and nothing of it is copied.
func readMessage(line []byte) (rpcMessage, bool) {
	if !json.Valid(line) {
		return rpcMessage{}, false
	}
	v, ok := foldedMembers(line, "id", "method", "params", "result")
	if !ok {
		return rpcMessage{}, false
	}
	m := rpcMessage{ID: v[0], Params: v[2], Result: v[3]}
	if v[1] != nil && json.Unmarshal(v[1], &m.Method) != nil {
		return rpcMessage{}, false
	}
	return m, true
}

// foldedMembers returns the values of the members of the JSON object raw (valid JSON)
// with the given names, as encoding/json reads an object into a struct's fields: a name
// in any case, of several spellings the last; nil for a name not there. It reports false
// when raw is no object. The values are raw's own bytes, as members returns them.
func foldedMembers(raw []byte, names ...string) ([]json.RawMessage, bool) {
	values := make([]json.RawMessage, len(names))
	ok := walkMembers(raw, func(name string, vs, ve int) {
		for i, n := range names {
			if strings.EqualFold(name, n) {
				values[i] = raw[vs:ve:ve]
				return
			}
		}
	})
	return values, ok
}

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf(format, args...)}
}
