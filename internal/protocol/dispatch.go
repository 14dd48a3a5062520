package protocol

// This file owns how tools/call requests run: each on its own goroutine, handed to
// mcp-go's MCPServer.HandleMessage (which decodes it, finds the tool and runs its handler),
// so that no call waits for another. A worker pool sized for the waits would either be too
// small for a client with many waits open (quick calls queue behind them) or hold a
// parked goroutine per slot for nothing; a goroutine per call costs only while the call
// runs. What is bounded is how many run: calls that may wait (Config.MayWait) at most
// Config.MaxWaits, and all calls at most maxCalls. A call over either cap is answered at
// once with a BUSY tool result saying how many are in flight, so the client learns to
// retry rather than wait on a queue it cannot see.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// codeBusy is the tool contract's code for "too much in flight, retry" (the table of codes
// is the tools package's; a BUSY answer from here must read like one from there).
const codeBusy = "BUSY"

// dispatch runs a tools/call on its own goroutine, or answers BUSY at once.
func (s *Session) dispatch(m rpcMessage, id string, line []byte) {
	tc := toolCallOf(m.Params)
	name := tc.Name
	wait := s.cfg.MayWait(name, members(tc.Arguments))
	meta := members(tc.Meta)

	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	if busy := s.busyLocked(wait); busy != "" {
		s.mu.Unlock()
		s.log.Warn("tool call refused: too many in flight", "tool", quote.Short(name), "reason", busy)
		s.reply(m.ID, mcp.NewToolResultError(codeBusy+": "+busy), nil)
		return
	}
	ctx, cancel := context.WithCancel(s.callCtx)
	c := &call{id: m.ID, spelt: requestToken(line), task: s.cfg.Tasks != nil && name == s.cfg.Tasks.Tool && s.declaresLocked(meta), tool: true, wait: wait, cancel: cancel}
	s.trackLocked(id, c)
	wire := s.nextWireLocked()
	s.running++
	if wait {
		s.waiting++
	}
	s.wg.Add(1)
	s.mu.Unlock()
	line = withRequestToken(withID(line, wire), c.token) // mcp-go would change some ids and tokens (ids.go)

	big := len(line) >= bigCall
	go func() {
		defer s.wg.Done()
		defer cancel()
		if big {
			bigCallBegins()
		}
		resp := s.serve(ctx, line)
		if big {
			line = nil
			// Before the answer, so that what the client sees next is the server's
			// footprint after the call, not during it.
			bigCallEnds()
		}
		s.finish(id, c, resp)
	}()
}

// bigCall is the size of a tools/call line from which the call runs without the soft
// memory limit, and the memory its decoding took is handed back to the system before it is
// answered (bigCallBegins, bigCallEnds). A tasks_run of 10,000 tasks is about half a
// megabyte: at a megabyte it fell short, and its server kept its peak, 52 MiB, where it
// needs 34 (issue 29).
const bigCall = 1 << 18

// memoryReturnGap is the least time between two returns of memory.
const memoryReturnGap = 2 * time.Second

// bigCalls is what the big calls running share: how many they are, the memory limit the
// first of them lifted, and when memory was last handed back.
var bigCalls struct {
	sync.Mutex
	n        int
	limit    int64
	returned time.Time
}

// bigCallBegins lifts the runtime's soft memory limit for a big call, until the last big
// call running ends. The server sets one (internal/server) that keeps its idle footprint
// near its live heap; the decoded forms of a tasks_run of 100,000 tasks are live at once
// and go past it, and beyond the limit the collector runs all the time: such a call cost
// 27-30 µs a task under the limit and 20-22 µs without, in a graph that costs 18-21 µs a
// task at 10,000 tasks (issue 29). The call's peak is higher (about 340 MiB instead of 250
// at 100,000 tasks). A limit the user set with GOMEMLIMIT is kept.
func bigCallBegins() {
	bigCalls.Lock()
	defer bigCalls.Unlock()
	if bigCalls.n == 0 && !userMemoryLimit {
		bigCalls.limit = debug.SetMemoryLimit(math.MaxInt64)
	}
	bigCalls.n++
}

// bigCallEnds ends a big call. Once the last one running is through, it puts the limit
// back, collects the garbage the calls left and hands the free memory back to the system
// at once: the copies and decoded forms of a tasks_run of 100,000 tasks are a few hundred
// megabytes, garbage once it is served, and the runtime would keep much of it mapped for
// minutes, the server's footprint twice its live heap while it holds the graph (issue
// 29). A full collection costs work in proportion to the live heap, so it runs at most
// once in memoryReturnGap: big calls back to back get one, not one each.
func bigCallEnds() {
	bigCalls.Lock()
	bigCalls.n--
	last := bigCalls.n == 0
	if last && !userMemoryLimit {
		debug.SetMemoryLimit(bigCalls.limit)
	}
	collect := last && time.Since(bigCalls.returned) >= memoryReturnGap
	if collect {
		bigCalls.returned = time.Now()
	}
	bigCalls.Unlock()
	if collect {
		debug.FreeOSMemory()
	}
}

// userMemoryLimit is whether the user set the limit (GOMEMLIMIT) rather than the server.
var userMemoryLimit = os.Getenv("GOMEMLIMIT") != ""

// toolCall is what a tools/call's params say, read as mcp-go reads them when it runs the
// call: into a struct, whose keys match case-insensitively, the last one winning. Read
// from a map instead, {"name":"shell_list","NAME":"shell_open"} would be taken for a call
// of shell_list (read-only, and never waiting) that mcp-go then runs as shell_open.
type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// toolCallOf reads a tools/call's params, valid JSON, scanning rather than decoding them
// (the arguments are the line's own bytes: see members); params that would not decode
// into a toolCall (which mcp-go then refuses) read as no name, which is neither a
// read-only tool nor one that never waits.
func toolCallOf(params json.RawMessage) toolCall {
	v, ok := foldedMembers(params, "name", "arguments", "_meta")
	if !ok {
		return toolCall{}
	}
	tc := toolCall{Arguments: v[1], Meta: v[2]}
	if v[0] != nil && json.Unmarshal(v[0], &tc.Name) != nil {
		return toolCall{}
	}
	return tc
}

// busyLocked says why a call cannot start now, or "" when it can; a waiting call that
// can has taken its place in Config.Waits.
func (s *Session) busyLocked(wait bool) string {
	switch {
	case s.running >= maxCalls:
		return fmt.Sprintf("%d tool calls are in flight, the most this server runs at once; retry when some have returned", s.running)
	case wait && !s.cfg.Waits.take():
		return fmt.Sprintf("%d waiting calls (%s) are in flight, "+
			"the most this server runs at once; retry when one of them has returned, or wait on fewer things at a time", s.cfg.Waits.max, s.cfg.WaitingCalls)
	}
	return ""
}

// serve runs one tools/call through mcp-go and returns the response to write, whose id
// finish puts back.
func (s *Session) serve(ctx context.Context, line []byte) (resp any) {
	defer func() {
		// mcp-go recovers a panicking tool handler (WithRecovery); this is for the rest.
		if r := recover(); r != nil {
			s.log.Error("tools/call panicked", "panic", r)
			resp = response{JSONRPC: "2.0", Error: &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("internal error: %v", r)}}
		}
	}()
	return s.cfg.MCP.HandleMessage(ctx, line)
}

// finish writes a call's response, with the client's id, unless the client cancelled the
// call.
func (s *Session) finish(id string, c *call, resp any) {
	s.mu.Lock()
	cancelled := c.cancelled
	s.mu.Unlock()
	var line []byte
	if !cancelled { // a cancel that comes while the response is encoded is caught below
		b, err := json.Marshal(resp)
		if err != nil {
			s.log.Error("tools/call: cannot encode the response", "err", err)
			b = encodeResponse(nil, nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "cannot encode the response: " + err.Error()})
		}
		line = restoreID(bytes.TrimSuffix(b, []byte("\n")), c.id, "tools/call")
		if len(line) == 0 || line[len(line)-1] != '\n' {
			line = append(line, '\n')
		}
		if c.task {
			line = s.asTask(line)
		}
	}
	s.write(id, c, line)
}

// write ends request id, which c tracks, and writes its response line, unless the client
// cancelled it or the transport has returned. Writing holds wmu, so that no progress
// notification of the request can follow its response.
func (s *Session) write(id string, c *call, line []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if c.tool {
		s.running--
		if c.wait {
			s.waiting--
			s.cfg.Waits.put()
		}
	}
	if s.calls[id] == c {
		s.answeredLocked(id)
	}
	skip := c.cancelled || s.closed
	s.mu.Unlock()
	if skip {
		return // the spec: a cancelled request gets no response
	}
	if _, err := s.out.Write(line); err != nil {
		s.log.Warn("write response", "err", err)
	}
}

// Waits counts waiting tool calls in flight against a cap (Config.Waits): a session's own,
// or one that several sessions share.
type Waits struct {
	mu  sync.Mutex
	n   int
	max int
}

// NewWaits returns a cap of max waiting calls; max <= 0 is DefaultMaxWaits.
func NewWaits(max int) *Waits {
	if max <= 0 {
		max = DefaultMaxWaits
	}
	return &Waits{max: max}
}

// take counts one more waiting call, unless max are in flight.
func (w *Waits) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n >= w.max {
		return false
	}
	w.n++
	return true
}

// put counts one waiting call fewer.
func (w *Waits) put() {
	w.mu.Lock()
	w.n--
	w.mu.Unlock()
}
