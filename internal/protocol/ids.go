package protocol

// This file owns what the session changes in the messages it hands on to mcp-go, and back:
// request ids, progress tokens, params that do not fit their method, and the protocol
// version initialize negotiates.
//
// Ids: JSON-RPC ids are the client's, to be echoed as sent. mcp-go decodes an id into an
// int64 or a float64 and writes that back: 9007199254740993 returns as
// 9007199254740992, 1.0 as 1, 1e3 as 1000. So mcp-go never sees a client's id: each
// request reaches it with a wire id, a small integer the session gives (it survives any
// decoding), and the response gets the client's id back, spliced in byte for byte.
//
// Progress tokens likewise: mcp-go decodes a numeric token into a float64, so tokens one
// float64 apart (9007199254740992 and 9007199254740993) would come back as one. A request
// with a token (a string or a number) reaches mcp-go with a wire token of its own, from
// the same counter as wire ids, and each notifications/progress mcp-go writes with it gets
// that request's token back as the client spelt it. The wire token is forgotten when the
// request is answered or cancelled: progress written with it after that is dropped.

import (
	"bytes"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// Versions are the protocol revisions the session speaks, newest first: mcp-go's, less
// 2025-03-26, whose JSON-RPC batches the session does not take. server/discover lists
// them.
var Versions = slices.DeleteFunc(slices.Clone(mcp.ValidProtocolVersions), func(v string) bool {
	return v == mcp.ProtocolVersion20250326
})

// offeredInstead is the revision initialize offers a client that asks for 2025-03-26 (or
// for none, which mcp-go takes as 2025-03-26): the next one, the revision that removed
// batches.
const offeredInstead = mcp.ProtocolVersion20250618

// forwarded is a request handed on to mcp-go, until its response is written.
type forwarded struct {
	c         *call  // its call (c.id is the client's id, c.wire mcp-go's)
	key       string // the client's id (idKey), under which the session tracks c
	method    string
	cancelled bool // the client cancelled it: its response is dropped
}

// forward records a request the session hands on to mcp-go, by the client's id key and
// its call c, and returns its line with a wire id instead of the client's.
func (s *Session) forward(key string, c *call, method string, line []byte) []byte {
	s.mu.Lock()
	c.wire = s.nextWireLocked()
	s.trackLocked(key, c)
	s.wired[wireKey(c.wire)] = &forwarded{c: c, key: key, method: method}
	s.mu.Unlock()
	return withRequestToken(withID(line, c.wire), c.token)
}

// nextWireLocked gives the next wire id.
func (s *Session) nextWireLocked() json.RawMessage {
	s.lastWire++
	return strconv.AppendInt(nil, s.lastWire, 10)
}

// wireKey is the key of a wire id as mcp-go writes it back; "" for anything else.
func wireKey(raw json.RawMessage) string {
	key, _ := idKey(raw)
	return key
}

// withID returns msg, a JSON object, with the value of its id member replaced by id, byte
// for byte; msg as it is when it has none. Like encoding/json, which decodes the message
// on both sides, it takes a member name in any case ("ID") and, of several, the last.
func withID(msg []byte, id json.RawMessage) []byte {
	start, end, ok := memberSpan(msg, folded("id"))
	if !ok {
		return msg
	}
	return splice(msg, start, end, id)
}

// requestTokenSpan is where the progress token of request line is, as mcp-go reads it:
// params._meta.progressToken, the first two names in any case (encoding/json's struct
// fields), the last exactly (mcp.Meta reads a map).
func requestTokenSpan(line []byte) (start, end int, ok bool) {
	ps, pe, ok := memberSpan(line, folded("params"))
	if !ok {
		return 0, 0, false
	}
	ms, me, ok := memberSpan(line[ps:pe], folded("_meta"))
	if !ok {
		return 0, 0, false
	}
	ts, te, ok := memberSpan(line[ps+ms:ps+me], exactly("progressToken"))
	return ps + ms + ts, ps + ms + te, ok
}

// notificationTokenSpan is where the progress token of a notifications/progress line
// mcp-go wrote is: params.progressToken.
func notificationTokenSpan(line []byte) (start, end int, ok bool) {
	ps, pe, ok := memberSpan(line, exactly("params"))
	if !ok {
		return 0, 0, false
	}
	ts, te, ok := memberSpan(line[ps:pe], exactly("progressToken"))
	return ps + ts, ps + te, ok
}

// withRequestToken returns request line with its progress token replaced by token, byte
// for byte; line as it is when it has none, or token is nil.
func withRequestToken(line []byte, token json.RawMessage) []byte {
	start, end, ok := requestTokenSpan(line)
	if !ok || token == nil {
		return line
	}
	return splice(line, start, end, token)
}

func folded(name string) func(string) bool {
	return func(n string) bool { return strings.EqualFold(n, name) }
}

func exactly(name string) func(string) bool {
	return func(n string) bool { return n == name }
}

// memberSpan returns where the value of the member of the JSON object msg whose name
// match takes starts and ends; of several, the last, as encoding/json takes. ok is false
// when msg is no object or has no such member.
//
// msg is valid JSON: every line it is called on was checked whole before (Session.Handle;
// mcp-go's own output), and the spans it returns are of values within it. So it scans
// rather than decodes: a tools/call of 100,000 tasks is a line of megabytes, and a decoder
// copied each member's value and grew its buffer to the size of the line, for each of the
// four spans a request takes (issue 29). On anything it does not expect it says ok false,
// as the decoder did on bad JSON.
func memberSpan(msg []byte, match func(string) bool) (start, end int, ok bool) {
	start, end = -1, -1
	if !walkMembers(msg, func(name string, vs, ve int) {
		if match(name) {
			start, end = vs, ve
		}
	}) {
		return 0, 0, false
	}
	return start, end, start >= 0
}

// walkMembers calls visit with the name and the value's span of each member of the JSON
// object msg, in order, and reports whether msg is an object it could read to its end
// (visit may have been called for the members before a fault). msg is valid JSON, as
// for memberSpan; values are skipped, not decoded.
func walkMembers(msg []byte, visit func(name string, vs, ve int)) bool {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return false
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return true
	}
	for i < len(msg) {
		ke, ok := skipString(msg, i)
		if !ok {
			return false
		}
		name, ok := memberName(msg[i:ke])
		if !ok {
			return false
		}
		i = skipSpace(msg, ke)
		if i >= len(msg) || msg[i] != ':' {
			return false
		}
		vs := skipSpace(msg, i+1)
		ve, ok := skipValue(msg, vs)
		if !ok {
			return false
		}
		visit(name, vs, ve)
		i = skipSpace(msg, ve)
		switch {
		case i < len(msg) && msg[i] == ',':
			i = skipSpace(msg, i+1)
		case i < len(msg) && msg[i] == '}':
			return true
		default:
			return false
		}
	}
	return false
}

// memberName is the name a member's quoted key spells: as it is, or, with an escape or
// bytes that are not UTF-8 in it, decoded (encoding/json reads those as U+FFFD).
func memberName(quoted []byte) (string, bool) {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1]), true
	}
	var name string
	return name, json.Unmarshal(quoted, &name) == nil
}

// skipSpace returns the index of the first byte from i on that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++ // the escaped byte (of \uXXXX, the u: the hex digits are plain)
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the JSON value that starts at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	// A number, true, false or null: it ends where a separator or white space starts.
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[j])) {
		j++
	}
	return j, j > i
}

// splice returns msg with msg[start:end] replaced by value.
func splice(msg []byte, start, end int, value []byte) []byte {
	out := make([]byte, 0, len(msg)-(end-start)+len(value))
	return append(append(append(out, msg[:start]...), value...), msg[end:]...)
}

// restoreID is mcp-go's response line to a request of method as the client must read
// it: with the client's id, and with a failure to decode the request's params, which
// mcp-go answers as an invalid request, answered as invalid params.
func restoreID(line []byte, id json.RawMessage, method string) []byte {
	var m struct {
		Error *rpcError `json:"error"`
	}
	if json.Unmarshal(line, &m) == nil && m.Error != nil && m.Error.Code == mcp.INVALID_REQUEST {
		// server.UnparsableMessageError: the method is known, its params do not decode.
		if detail, ok := strings.CutPrefix(m.Error.Message, "unparsable "+method+" request: "); ok {
			return encodeResponse(id, nil, invalidParams("%s: a member of params has the wrong type (%s)", method, detail))
		}
	}
	return withID(line, id)
}

// encodeResponse is a response line. The id is written as the client sent it (encodeLine).
func encodeResponse(id json.RawMessage, result any, rerr *rpcError) []byte {
	line := encodeLine(response{JSONRPC: "2.0", ID: id, Result: result, Error: rerr})
	if line == nil {
		line = encodeLine(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: mcp.INTERNAL_ERROR, Message: "cannot encode the response"}})
	}
	return line
}

// encodeLine is v as a JSON line, nil if it cannot be encoded. Unlike json.Marshal, which
// escapes <, > and & even in a json.RawMessage, it writes no escape the client did not:
// the ids and tokens it carries are written back as the client sent them.
func encodeLine(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return b.Bytes()
}

// checkParams refuses a request whose params are not an object (MCP's params always are)
// and a tools/call whose arguments are not one: invalid params, -32602. Absent or null
// params, or arguments, are taken as none.
func checkParams(method string, raw json.RawMessage, params map[string]json.RawMessage) *rpcError {
	if len(raw) > 0 && string(raw) != "null" && params == nil {
		return invalidParams("%s: params must be an object, not %s", method, kindOf(raw))
	}
	if args, ok := params["arguments"]; method == "tools/call" && ok && string(args) != "null" && !isObject(args) {
		return invalidParams("tools/call: params.arguments must be an object of the tool's arguments by name, not %s", kindOf(args))
	}
	return nil
}

// kindOf names the kind of a JSON value, for a message.
func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// offerVersion returns an initialize line that asks for 2025-03-26, or for no version,
// as one that asks for offeredInstead, so that mcp-go negotiates that (for the session
// too: it records what it answered). The spec has the server answer with another version
// it supports when it does not support the client's.
func offerVersion(line []byte, params map[string]json.RawMessage) []byte {
	var version string
	if raw, ok := params["protocolVersion"]; ok && json.Unmarshal(raw, &version) != nil {
		return line // not a string: mcp-go refuses it (invalid params)
	}
	if version != "" && version != mcp.ProtocolVersion20250326 {
		return line
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	for name := range msg {
		if strings.EqualFold(name, "params") {
			delete(msg, name)
		}
	}
	params["protocolVersion"] = json.RawMessage(strconv.Quote(offeredInstead))
	var err error
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return out
}

// idKey is a request id (a string or a number) as a map key. It is exact: ids that are
// different JSON values have different keys (9007199254740993 is not
// 9007199254740992), while spellings of one number (5, 5.0, 5e0) are one id, as they are
// one value.
func idKey(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case c == '-' || '0' <= c && c <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", false
		}
		return "n" + numberKey(n.String()), true
	}
	return "", false
}

// numberKey is a JSON number's exact value, written one way. A number too long, or with
// too large an exponent, to be worth the arithmetic keys as it is spelled.
func numberKey(n string) string {
	if len(n) > 100 {
		return n
	}
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(n[i+1:]); err != nil || exp > 400 || exp < -400 {
			return n
		}
	}
	r, ok := new(big.Rat).SetString(n)
	if !ok {
		return n
	}
	return r.RatString()
}
