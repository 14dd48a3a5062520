package protocol

// Streamable HTTP, the transport of a server that clients reach over the network
// (mcp-harness http): one endpoint that takes each client message as a POST and answers a
// request with its response, as one JSON object, or as a stream of server-sent events when
// progress comes first. The messages go through the same Session as over stdio (dispatch,
// BUSY, cancellation, ids, progress, the MCP Tasks extension); what this file adds is how
// they come and go, and the sessions of the revisions that have them:
//
//   - Revision 2026-07-28 (a request whose _meta carries its protocolVersion) has no
//     session: each request is served by a Session of its own, made for it and closed with
//     its answer. The MCP-Protocol-Version header must name the body's version, and
//     Mcp-Method and Mcp-Name the body's method and name; a request whose headers do not
//     match is refused with HeaderMismatch (-32020) and changes nothing. Closing the
//     response is the cancellation: the call ends, and nothing more is sent for it.
//   - Revisions 2025-11-25 and 2025-06-18 (and a client that says 2025-03-26 in the
//     header of later requests, as clients do) open a session with initialize: its answer
//     carries Mcp-Session-Id, 128 random bits, which every later request must carry
//     (400 without it, 404 when it names no session of the request's principal). DELETE
//     ends it, cancelling its calls in flight. GET is 405: the server sends nothing that
//     is not an answer to a request, so there is no stream to open. notifications/cancelled
//     ends a call as over stdio (its POST then ends without a response); so does closing
//     the request's connection, since without resumable streams nobody could read the
//     answer any more.
//
// A principal (the subject the HTTP layer in front authenticated, Principal of the
// request's context) owns the sessions it opens: another's id is 404, as an unknown one.
// All sessions and requests of one principal share one cap on waiting calls (Waits).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

const (
	// DefaultHTTPSessions is HTTPConfig.MaxSessions when it is 0: more MCP sessions than
	// the clients of one principal keep open, few enough that a client that forgets to end
	// them cannot pile them up.
	DefaultHTTPSessions = 64
	// DefaultHTTPSessionIdle is HTTPConfig.SessionIdle when it is 0.
	DefaultHTTPSessionIdle = time.Hour
	// eventsBuffered bounds the progress notifications held for a request whose answer is
	// not written yet: more are dropped (progress is best effort).
	eventsBuffered = 64
	// sessionHeader names the session of the revisions that have one.
	sessionHeader = "Mcp-Session-Id"
)

// HTTPConfig is what the Streamable HTTP transport needs.
type HTTPConfig struct {
	// Session is the Config of every Session the transport makes (Waits is the
	// transport's, one per principal, with Session.MaxWaits each).
	Session Config
	// ReadOnlyTool reports whether a tool changes nothing, for Allowed; nil: none does.
	ReadOnlyTool func(name string) bool
	// Allowed, if set, reports whether the request's principal may do what its message
	// asks; run is true for a message that may change something (a tools/call of a tool
	// that is not read-only, tasks/cancel, tasks/update). When it says no, it has written
	// the answer (403, with the challenge its scheme has). Nil allows everything.
	Allowed func(w http.ResponseWriter, r *http.Request, run bool) bool
	// MaxSessions bounds the MCP sessions of one principal (0: DefaultHTTPSessions): an
	// initialize over it ends the principal's session unused for longest, or is refused
	// (503) when every one has a call in flight.
	MaxSessions int
	// SessionIdle is how long an MCP session may go unused before it is ended (its next
	// request is 404, and the client initializes again); 0: DefaultHTTPSessionIdle.
	SessionIdle time.Duration
}

// HTTPHandler serves MCP over Streamable HTTP on the endpoint it is mounted at. It is an
// http.Handler; Shutdown ends it.
type HTTPHandler struct {
	cfg HTTPConfig
	log *slog.Logger
	ctx context.Context // the server's: what the sessions run derives from it

	mu       sync.Mutex
	sessions map[string]*httpSession   // MCP sessions by id
	live     map[*httpSession]struct{} // every Session open, stateless requests' too
	waits    map[string]*Waits         // by principal
	closing  bool                      // Shutdown has begun: every request is 503
	requests int64                     // stateless requests served: their mcp-go session ids
	nowFunc  func() time.Time          // time.Now; tests move it
}

// NewHTTPHandler returns the transport; ctx is the server's, whose values (and end) the
// calls it runs inherit, as ServeStdio's context.
func NewHTTPHandler(ctx context.Context, cfg HTTPConfig) *HTTPHandler {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultHTTPSessions
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultHTTPSessionIdle
	}
	if cfg.Session.Logger == nil {
		cfg.Session.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Session.Tasks != nil {
		// Advertised once here; each Session would do it again (New).
		server.WithExtensions(map[string]any{tasksExtension: map[string]any{}})(cfg.Session.MCP)
	}
	return &HTTPHandler{cfg: cfg, log: cfg.Session.Logger, ctx: ctx, sessions: map[string]*httpSession{},
		live: map[*httpSession]struct{}{}, waits: map[string]*Waits{}, nowFunc: time.Now}
}

// ServeHTTP serves the endpoint: POST carries a message, DELETE ends a session, and GET
// (a stream of the server's own messages, which there are none of) and anything else is
// 405.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	if closing {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, nil, mcp.INTERNAL_ERROR, "the server is shutting down; connect again once it is back")
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST, fmt.Sprintf(
			"%s is not served here: POST a JSON-RPC message to this endpoint (DELETE ends a session); this server sends nothing but answers to requests, so it has no stream to GET", quote.Short(r.Method)))
	}
}

// Shutdown ends every session: the calls in flight are cancelled with the cause
// ErrShuttingDown and answered (their requests get the answers), and every request from
// now on is 503. It returns when that is done.
func (h *HTTPHandler) Shutdown() {
	h.mu.Lock()
	h.closing = true
	all := make([]*httpSession, 0, len(h.live))
	for hs := range h.live {
		all = append(all, hs)
	}
	clear(h.sessions)
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, hs := range all {
		wg.Go(hs.close)
	}
	wg.Wait()
}

// message is what the transport reads of a client's message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// post serves one message: checks it (media type, size, JSON, the headers of its
// revision, the principal's scope), finds or makes its Session, hands it in and writes
// what comes back.
func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, nil, mcp.INVALID_REQUEST, "the body must be one JSON-RPC message sent as Content-Type: application/json")
		return
	}
	jsonOK, sseOK := accepts(r.Header.Values("Accept"))
	if !jsonOK && !sseOK {
		writeError(w, http.StatusNotAcceptable, nil, mcp.INVALID_REQUEST, "the Accept header must list application/json and text/event-stream: answers come as either")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxLineBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		h.log.Warn("refused an oversized HTTP message", "limit", MaxLineBytes)
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST, fmt.Sprintf(
			"the message is over %d bytes, the most accepted per message; send less in one call (put a long input or script in a file in the workspace)", MaxLineBytes))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "the body could not be read: "+err.Error())
		return
	}
	var m message
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		writeError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "JSON-RPC batches are not accepted (MCP removed them in 2025-06-18): send each message as a POST of its own")
		return
	}
	if json.Unmarshal(body, &m) != nil {
		writeError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "the body is not a JSON-RPC message (a JSON object with jsonrpc, method and, for a request, id)")
		return
	}
	params := members(m.Params)
	var metaVersion string
	_ = json.Unmarshal(members(params["_meta"])[mcp.MetaKeyProtocolVersion], &metaVersion)
	headerVersion := r.Header.Get(mcp.HeaderProtocolVersion)
	modern := mcp.IsModernProtocol(metaVersion) || mcp.IsModernProtocol(headerVersion)
	notification := len(m.ID) == 0 || string(m.ID) == "null" && strings.HasPrefix(m.Method, "notifications/")

	switch {
	case m.Method == "" && (len(m.Result) > 0 || len(m.Error) > 0):
		// A response to a request of the server's: it sends none.
		if modern {
			writeError(w, http.StatusBadRequest, m.ID, mcp.INVALID_REQUEST, "a client sends no responses in revision "+mcp.ProtocolVersion20260728)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	case m.Method == "":
		writeError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "the message has no method: send a JSON-RPC request or notification")
		return
	}
	if modern {
		if rerr := checkModernHeaders(r.Header, metaVersion, headerVersion, m, notification); rerr != nil {
			writeError(w, http.StatusBadRequest, requestID(m.ID, notification), rerr.Code, rerr.Message)
			return
		}
	} else if headerVersion != "" && (!mcp.IsValidProtocolVersion(headerVersion) || headerVersion < mcp.ProtocolVersion20250326) {
		writeError(w, http.StatusBadRequest, requestID(m.ID, notification), mcp.INVALID_REQUEST, fmt.Sprintf(
			"unsupported %s %s: this server speaks %s", mcp.HeaderProtocolVersion, quote.Short(headerVersion), strings.Join(Versions, ", ")))
		return
	}
	if h.cfg.Allowed != nil && !h.cfg.Allowed(w, r, h.changes(m.Method, m.Params)) {
		return
	}
	principal := Principal(r.Context())

	var hs *httpSession
	initialize := !modern && !notification && m.Method == "initialize"
	switch {
	case modern && notification:
		// This revision defines no notification a client sends over HTTP (closing the
		// response cancels): there is nothing to hand it to.
		w.WriteHeader(http.StatusAccepted)
		return
	case modern:
		hs = h.open(principal, "")
		if hs == nil {
			writeError(w, http.StatusServiceUnavailable, requestID(m.ID, notification), mcp.INTERNAL_ERROR, "the server is shutting down")
			return
		}
		defer hs.close()
	case initialize:
		var err error
		if hs, err = h.openSession(principal, newSessionID()); err != nil {
			writeError(w, http.StatusServiceUnavailable, m.ID, mcp.INTERNAL_ERROR, err.Error())
			return
		}
	default:
		var status int
		var why string
		if hs, status, why = h.find(r.Header.Get(sessionHeader), principal); hs == nil {
			writeError(w, status, requestID(m.ID, notification), mcp.INVALID_REQUEST, why)
			return
		}
	}
	if notification {
		if key, ok := idKey(params["requestId"]); ok && m.Method == "notifications/cancelled" {
			hs.abandon(key)
		}
		hs.handle(body)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h.request(w, r, hs, m, body, modern, initialize, sseOK)
}

// request hands a request to its Session and writes the answer: a JSON object, or a
// stream of events when progress comes before it and the client takes streams.
func (h *HTTPHandler) request(w http.ResponseWriter, r *http.Request, hs *httpSession, m message, body []byte, modern, initialize, sseOK bool) {
	key, valid := idKey(m.ID)
	if !valid {
		key = "" // the Session answers it at once, with a null id
		hs.badMu.Lock()
		defer hs.badMu.Unlock()
	}
	ex, ok := hs.expect(key, requestToken(body))
	if !ok {
		writeError(w, statusFor(modern, http.StatusBadRequest), m.ID, mcp.INVALID_REQUEST, fmt.Sprintf(
			"the id %s is already that of a request in flight on this session: give each request an id of its own", quote.Short(string(m.ID))))
		return
	}
	hs.handle(body)
	var stream *eventStream
	for {
		select {
		case line := <-ex.final:
			stream = drain(w, ex, stream, sseOK, hs.id, initialize && answeredOK(line))
			if initialize && !answeredOK(line) {
				hs.close() // a failed initialize leaves no session; the client may try again
				h.forget(hs)
				initialize = false
			}
			if stream != nil {
				stream.event(line)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if initialize {
				w.Header().Set(sessionHeader, hs.id)
			}
			w.WriteHeader(statusFor(modern, statusOfAnswer(line)))
			_, _ = w.Write(line)
			return
		case line := <-ex.events:
			if !sseOK {
				continue // the client takes no stream: progress is best effort
			}
			if stream == nil {
				stream = startStream(w, hs.id, initialize)
			}
			stream.event(line)
		case <-ex.abandoned:
			// notifications/cancelled: the call ends and is not answered. The request is
			// ended with nothing in it.
			if stream == nil && sseOK {
				startStream(w, "", false)
			} else if stream == nil {
				w.WriteHeader(http.StatusNoContent)
			}
			return
		case <-r.Context().Done():
			hs.cancel(key, m.ID)
			return
		case <-hs.done:
			select {
			case line := <-ex.final:
				if stream != nil {
					stream.event(line)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(statusFor(modern, statusOfAnswer(line)))
				_, _ = w.Write(line)
				return
			default:
			}
			if stream == nil {
				writeError(w, http.StatusServiceUnavailable, m.ID, mcp.INTERNAL_ERROR, "the session ended before this request was answered: the server is shutting down, or the session was deleted")
			}
			return
		}
	}
}

// drain writes the progress held for ex before its answer, starting the stream for it if
// it must (an initialize's with the session's id); it returns the stream, nil if none.
func drain(w http.ResponseWriter, ex *exchange, stream *eventStream, sseOK bool, sessionID string, initialize bool) *eventStream {
	for {
		select {
		case line := <-ex.events:
			if !sseOK {
				continue
			}
			if stream == nil {
				stream = startStream(w, sessionID, initialize)
			}
			stream.event(line)
		default:
			return stream
		}
	}
}

// changes reports whether a message of method with params may change something: what a
// principal that may only read is refused.
func (h *HTTPHandler) changes(method string, params json.RawMessage) bool {
	switch method {
	case "tools/call":
		// The name the call will run under, read as mcp-go reads it (toolCallOf): a
		// second spelling of "name" in another case must not pass a run tool off as a
		// read-only one.
		name := toolCallOf(params).Name
		return h.cfg.ReadOnlyTool == nil || !h.cfg.ReadOnlyTool(name)
	case "tasks/cancel", "tasks/update":
		return true
	}
	return false
}

// delete ends the MCP session the request names.
func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST, "revision "+mcp.ProtocolVersion20260728+" has no sessions to delete")
		return
	}
	hs, status, why := h.find(r.Header.Get(sessionHeader), Principal(r.Context()))
	if hs == nil {
		writeError(w, status, nil, mcp.INVALID_REQUEST, why)
		return
	}
	h.forget(hs)
	hs.close()
	w.WriteHeader(http.StatusNoContent)
}

// checkModernHeaders checks the headers a request of revision 2026-07-28 must carry
// against its body: a mismatch is HeaderMismatch.
func checkModernHeaders(header http.Header, metaVersion, headerVersion string, m message, notification bool) *rpcError {
	mismatch := func(format string, args ...any) *rpcError {
		return &rpcError{Code: mcp.HEADER_MISMATCH, Message: "Header mismatch: " + fmt.Sprintf(format, args...)}
	}
	switch {
	case headerVersion == "":
		return mismatch("the %s header is required with a request of revision %s", mcp.HeaderProtocolVersion, quote.Short(metaVersion))
	case metaVersion == "":
		return mismatch("the %s header says %s, but params._meta[%q] is missing; a request of that revision carries its version in both",
			mcp.HeaderProtocolVersion, quote.Short(headerVersion), mcp.MetaKeyProtocolVersion)
	case headerVersion != metaVersion:
		return mismatch("the %s header %s does not match params._meta[%q] %s",
			mcp.HeaderProtocolVersion, quote.Short(headerVersion), mcp.MetaKeyProtocolVersion, quote.Short(metaVersion))
	}
	if notification {
		return nil // the revision sets no header rules for a notification's POST
	}
	if err := mcp.ValidateStandardHeaders(header.Get, metaVersion, mcp.MCPMethod(m.Method), m.Params); err != nil {
		return mismatch("%v", err)
	}
	return nil
}

// requestID is the id an error about message id answers with: none for a notification.
func requestID(id json.RawMessage, notification bool) json.RawMessage {
	if notification {
		return nil
	}
	if _, ok := idKey(id); !ok {
		return nil
	}
	return id
}

// accepts reads the Accept header: whether the client takes a JSON answer, and a stream
// of events. None at all, or */*, takes both.
func accepts(values []string) (json, sse bool) {
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "*/*":
				json, sse = true, true
			case "application/*", "application/json":
				json = true
			case "text/*", "text/event-stream":
				sse = true
			}
		}
	}
	return json, sse
}

// statusFor is the HTTP status of an answer: in revision 2026-07-28, the one the spec
// gives its error (statusOfAnswer); before, 200 whatever it says.
func statusFor(modern bool, status int) int {
	if modern {
		return status
	}
	return http.StatusOK
}

// statusOfAnswer is the status revision 2026-07-28 gives a response line: 404 for a
// method not found, 400 for a request the server refused as malformed (HeaderMismatch,
// a missing capability, an unsupported version, invalid params or request), else 200.
func statusOfAnswer(line []byte) int {
	var resp struct {
		Error *rpcError `json:"error"`
	}
	if json.Unmarshal(line, &resp) != nil || resp.Error == nil {
		return http.StatusOK
	}
	switch resp.Error.Code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, codeMissingCapability, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// answeredOK reports whether a response line carries a result.
func answeredOK(line []byte) bool {
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	return json.Unmarshal(line, &resp) == nil && len(resp.Result) > 0 && string(resp.Result) != "null"
}

// writeError answers with status and a JSON-RPC error (id null when id is nil).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(encodeResponse(id, nil, &rpcError{Code: code, Message: msg}))
}

// eventStream is a request's answer as server-sent events.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startStream starts the answer as a stream of events; an initialize's carries the
// session's id.
func startStream(w http.ResponseWriter, sessionID string, initialize bool) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy must not hold the events back
	if initialize && sessionID != "" {
		h.Set(sessionHeader, sessionID)
	}
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// event writes one message as an event. A line of encoded JSON holds no newline, so it
// is one data line.
func (s *eventStream) event(line []byte) {
	_, _ = fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", bytes.TrimRight(line, "\n"))
	_ = s.rc.Flush()
}

// newSessionID is an MCP session's id: 128 random bits, in hex.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
	return hex.EncodeToString(b[:])
}

// waitsOfLocked is principal's cap on waiting calls. h.mu is held.
func (h *HTTPHandler) waitsOfLocked(principal string) *Waits {
	w := h.waits[principal]
	if w == nil {
		w = NewWaits(h.cfg.Session.MaxWaits)
		h.waits[principal] = w
	}
	return w
}

// open makes a Session for principal, an MCP session's when id is set (not yet findable:
// openSession registers it), or nil when the handler is shutting down.
func (h *HTTPHandler) open(principal, id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil
	}
	hs := newHTTPSession(h, principal, id, h.waitsOfLocked(principal))
	h.live[hs] = struct{}{}
	return hs
}

// openSession makes principal's new MCP session id, first ending the sessions unused
// for longer than SessionIdle, and the principal's least recently used one when it has
// MaxSessions.
func (h *HTTPHandler) openSession(principal, id string) (*httpSession, error) {
	h.mu.Lock()
	now := h.nowFunc()
	var ended []*httpSession
	var mine []*httpSession
	for sid, hs := range h.sessions {
		switch {
		case hs.idleSince(now) > h.cfg.SessionIdle:
			ended = append(ended, hs)
			delete(h.sessions, sid)
			delete(h.live, hs)
		case hs.principal == principal:
			mine = append(mine, hs)
		}
	}
	if len(mine) >= h.cfg.MaxSessions {
		slices.SortFunc(mine, func(a, b *httpSession) int { return a.lastUsed().Compare(b.lastUsed()) })
		i := slices.IndexFunc(mine, func(hs *httpSession) bool { return hs.idleSince(now) > 0 })
		if i < 0 {
			h.mu.Unlock()
			return nil, fmt.Errorf("%d sessions of yours are open and each has a call in flight, the most this server keeps; end one (DELETE) or wait for its calls", len(mine))
		}
		ended = append(ended, mine[i])
		delete(h.sessions, mine[i].id)
		delete(h.live, mine[i])
	}
	var hs *httpSession
	if !h.closing {
		hs = newHTTPSession(h, principal, id, h.waitsOfLocked(principal))
		h.live[hs] = struct{}{}
		h.sessions[id] = hs
	}
	h.mu.Unlock()
	for _, old := range ended {
		h.log.Info("ended an MCP session", "reason", "idle or one too many", "principal", principal)
		old.close()
	}
	if hs == nil {
		return nil, errors.New("the server is shutting down")
	}
	return hs, nil
}

// find is principal's MCP session id, or nil with the status and the reason to answer.
func (h *HTTPHandler) find(id, principal string) (hs *httpSession, status int, why string) {
	if id == "" {
		return nil, http.StatusBadRequest, "the " + sessionHeader + " header is missing: send initialize first, then its " + sessionHeader + " with every request"
	}
	h.mu.Lock()
	hs = h.sessions[id]
	h.mu.Unlock()
	if hs == nil || hs.principal != principal {
		return nil, http.StatusNotFound, "no such session (it ended, was deleted, or the server restarted): send initialize again"
	}
	hs.touch(h.nowFunc())
	return hs, 0, ""
}

// forget removes hs from the handler's sessions.
func (h *HTTPHandler) forget(hs *httpSession) {
	h.mu.Lock()
	if h.sessions[hs.id] == hs {
		delete(h.sessions, hs.id)
	}
	delete(h.live, hs)
	h.mu.Unlock()
}

// httpSession is a Session of the transport, with what routes its output to the
// requests that wait for it: an MCP session's (id set), or one stateless request's.
type httpSession struct {
	h         *HTTPHandler
	id        string
	principal string
	ctx       context.Context // carries the principal and mcp-go's client session
	s         *Session
	client    *clientSession

	handleMu sync.Mutex // Handle takes one message at a time
	badMu    sync.Mutex // one request with an invalid id at a time: its answer has no id to route by

	mu       sync.Mutex
	pending  map[string]*exchange // unanswered requests by id (idKey; "" for an invalid id)
	tokens   map[string]*exchange // by progress token (idKey)
	used     time.Time            // the last request's arrival
	inFlight int                  // requests waiting for their answers

	closeOnce sync.Once
	stop      chan struct{} // ends forwardNotes
	notesDone chan struct{} // forwardNotes has returned
	done      chan struct{} // closed once close has answered every call
}

// exchange is one request waiting for its answer.
type exchange struct {
	token     string      // its progress token's key, "" for none
	events    chan []byte // progress notifications, before the answer
	final     chan []byte // the answer (one)
	abandoned chan struct{}
	gone      bool // abandoned is closed
}

// newHTTPSession makes the Session of principal's MCP session id, or of one stateless
// request (id ""), and starts forwarding mcp-go's notifications through it. h.mu is held.
func newHTTPSession(h *HTTPHandler, principal, id string, waits *Waits) *httpSession {
	client := &clientSession{id: id, notes: make(chan mcp.JSONRPCNotification, eventsBuffered)}
	if id == "" {
		// mcp-go keys what it tracks of a request by its session's id and the request's
		// (wire) id, which each Session counts from 1: a stateless request's session id
		// must be its own.
		h.requests++
		client.id = "request-" + strconv.FormatInt(h.requests, 10)
	}
	hs := &httpSession{h: h, id: id, principal: principal, client: client, pending: map[string]*exchange{}, tokens: map[string]*exchange{},
		used: h.nowFunc(), stop: make(chan struct{}), notesDone: make(chan struct{}), done: make(chan struct{})}
	ctx := WithPrincipal(h.ctx, principal)
	ctx = server.WithSupportedProtocolVersions(ctx, Versions) // server/discover lists them
	hs.ctx = h.cfg.Session.MCP.WithContext(ctx, client)
	cfg := h.cfg.Session
	cfg.Waits = waits
	hs.s = newSession(hs.ctx, cfg, hs) // NewHTTPHandler advertised the Tasks extension, once
	go hs.forwardNotes()
	return hs
}

// handle hands one client message to the Session, and what it passes on to mcp-go, whose
// answer goes back through the Session like mcp-go's stdio server's would.
func (hs *httpSession) handle(line []byte) {
	hs.handleMu.Lock()
	fwd := hs.s.Handle(line)
	hs.handleMu.Unlock()
	if len(fwd) == 0 {
		return
	}
	if resp := hs.h.cfg.Session.MCP.HandleMessage(hs.ctx, fwd); resp != nil {
		b, err := json.Marshal(resp)
		if err != nil {
			hs.h.log.Error("cannot encode mcp-go's answer", "err", err)
			return
		}
		_, _ = hs.s.Write(append(b, '\n'))
	}
}

// forwardNotes writes what mcp-go sends the client (progress) through the Session, as
// mcp-go's stdio server does, until the session is closed.
func (hs *httpSession) forwardNotes() {
	defer close(hs.notesDone)
	for {
		select {
		case n := <-hs.client.notes:
			b, err := json.Marshal(n)
			if err == nil {
				_, _ = hs.s.Write(append(b, '\n'))
			}
		case <-hs.stop:
			return
		}
	}
}

// expect registers a request about to be handed in, by its id's key, with its progress
// token (the client's spelling, nil for none); false when a request with that id waits
// already.
func (hs *httpSession) expect(key string, token json.RawMessage) (*exchange, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if _, taken := hs.pending[key]; taken && key != "" {
		return nil, false
	}
	ex := &exchange{events: make(chan []byte, eventsBuffered), final: make(chan []byte, 1), abandoned: make(chan struct{})}
	hs.pending[key] = ex
	if tk, ok := idKey(token); ok {
		ex.token = tk
		hs.tokens[tk] = ex
	}
	hs.inFlight++
	return ex, true
}

// Write takes what the Session writes, one line at a time, to the request it belongs to:
// a response to the request with its id, a progress notification to the request with its
// token. Anything else has no request to go to and is dropped.
func (hs *httpSession) Write(line []byte) (int, error) {
	var m message
	if json.Unmarshal(line, &m) != nil {
		return len(line), nil
	}
	line = slices.Clone(line)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	switch {
	case m.Method == "notifications/progress":
		key, ok := idKey(members(m.Params)["progressToken"])
		if ex := hs.tokens[key]; ok && ex != nil {
			select {
			case ex.events <- line:
			default: // the client reads slower than progress comes: it is best effort
			}
		}
	case m.Method != "":
	default:
		key, ok := idKey(m.ID)
		if !ok {
			key = ""
		}
		if ex := hs.pending[key]; ex != nil {
			ex.final <- line
			hs.endLocked(key, ex)
		}
	}
	return len(line), nil
}

// endLocked forgets request key, which ex is. hs.mu is held.
func (hs *httpSession) endLocked(key string, ex *exchange) {
	delete(hs.pending, key)
	if ex.token != "" && hs.tokens[ex.token] == ex {
		delete(hs.tokens, ex.token)
	}
	hs.inFlight--
	hs.used = hs.h.nowFunc()
}

// abandon ends the wait of request key, which the client cancelled: it gets no answer.
func (hs *httpSession) abandon(key string) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if ex := hs.pending[key]; ex != nil && !ex.gone {
		ex.gone = true
		close(ex.abandoned)
		hs.endLocked(key, ex)
	}
}

// cancel ends request key (rawID as the client sent it), whose client went away: the call
// is cancelled as by notifications/cancelled, and nothing more is sent for it.
func (hs *httpSession) cancel(key string, rawID json.RawMessage) {
	hs.mu.Lock()
	if ex := hs.pending[key]; ex != nil {
		hs.endLocked(key, ex)
	}
	hs.mu.Unlock()
	if key == "" {
		return
	}
	note, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": rawID, "reason": "the client closed the request's HTTP response"}})
	if err == nil {
		hs.handle(note)
	}
}

// touch notes a request's arrival.
func (hs *httpSession) touch(now time.Time) {
	hs.mu.Lock()
	hs.used = now
	hs.mu.Unlock()
}

func (hs *httpSession) lastUsed() time.Time {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.used
}

// idleSince is how long the session has been unused at now: 0 while a request waits.
func (hs *httpSession) idleSince(now time.Time) time.Duration {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.inFlight > 0 {
		return 0
	}
	return max(now.Sub(hs.used), time.Nanosecond)
}

// close ends the session's calls, which are answered (the cause is ErrShuttingDown),
// then the session; safe to call more than once.
func (hs *httpSession) close() {
	hs.closeOnce.Do(func() {
		hs.s.stopCalls()
		hs.s.close()
		close(hs.stop)
		<-hs.notesDone
		close(hs.done)
		hs.h.mu.Lock()
		delete(hs.h.live, hs)
		hs.h.mu.Unlock()
	})
}

// clientSession is mcp-go's view of an httpSession: where its notifications go.
type clientSession struct {
	id          string
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
}

func (c *clientSession) SessionID() string                                   { return c.id }
func (c *clientSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }
func (c *clientSession) Initialize()                                         { c.initialized.Store(true) }
func (c *clientSession) Initialized() bool                                   { return c.initialized.Load() }
