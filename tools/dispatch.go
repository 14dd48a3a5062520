package tools

// This file owns how tools/call requests run: each on its own goroutine, handed to
// mcp-go's MCPServer.HandleMessage (which decodes it, finds the tool and runs its handler),
// so that no call waits for another. A worker pool sized for the waits would either be too
// small for a client with many waits open (quick calls queue behind them) or hold a
// parked goroutine per slot for nothing; a goroutine per call costs only while the call
// runs. What is bounded is how many run: calls that may wait (up to --max-wait, or a
// close's grace) at most Config.MaxWaits, and all calls at most maxCalls. A call over
// either cap is answered at once with a BUSY tool result saying how many are in flight, so
// the client learns to retry rather than wait on a queue it cannot see.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

const (
	// defaultMaxWaits is Config.MaxWaits when it is 0: far more waits than an agent keeps
	// open (a few terminals, a graph or two), few enough that a runaway client is told
	// BUSY long before the server strains.
	defaultMaxWaits = 256
	// maxCalls bounds all tool calls in flight, waiting or not: a client that pipelines
	// faster than calls finish gets BUSY rather than a goroutine per message.
	maxCalls = 1024
)

// waitingTools says which tools' calls may wait: for a terminal's output or exit, a
// graph's end, or a close's grace. They count against Config.MaxWaits. A tool missing here
// counts as waiting, the safe side; TestDispatch_ToolsClassified makes sure none is.
var waitingTools = map[string]func(args map[string]json.RawMessage) bool{
	"shell_open":   always,
	"shell_io":     always,
	"shell_close":  always,
	"shell_list":   never,
	"tasks_run":    never,
	"tasks_status": positive("waitMs"),
	"tasks_list":   never,
	"tasks_cancel": never,
	"tasks_graph":  never,
}

func always(map[string]json.RawMessage) bool { return true }
func never(map[string]json.RawMessage) bool  { return false }

// positive is a tool that waits when the argument name is a positive number.
func positive(name string) func(map[string]json.RawMessage) bool {
	return func(args map[string]json.RawMessage) bool {
		var n float64
		return json.Unmarshal(args[name], &n) == nil && n > 0
	}
}

// mayWait reports whether a call of the tool with these arguments may wait.
func mayWait(tool string, args map[string]json.RawMessage) bool {
	if waits, ok := waitingTools[tool]; ok {
		return waits(args)
	}
	return true
}

// dispatch runs a tools/call on its own goroutine, or answers BUSY at once.
func (f *facade) dispatch(m rpcMessage, id string, params map[string]json.RawMessage, line []byte) {
	var name string
	_ = json.Unmarshal(params["name"], &name)
	wait := mayWait(name, members(params["arguments"]))
	meta := members(params["_meta"])
	token, _ := jsonKey(meta["progressToken"])

	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		return
	}
	if busy := f.busyLocked(wait); busy != "" {
		f.mu.Unlock()
		f.s.log.Warn("tool call refused: too many in flight", "tool", quote.Short(name), "reason", busy)
		f.reply(m.ID, mcp.NewToolResultError(codeBusy+": "+busy), nil)
		return
	}
	ctx, cancel := context.WithCancel(f.callCtx)
	c := &call{token: token, task: f.tasks && name == "tasks_run" && f.declaresLocked(meta), tool: true, wait: wait, cancel: cancel}
	f.trackLocked(id, c)
	f.running++
	if wait {
		f.waiting++
	}
	f.wg.Add(1)
	f.mu.Unlock()

	go func() {
		defer f.wg.Done()
		defer cancel()
		f.finish(id, c, f.serve(ctx, m.ID, line))
	}()
}

// busyLocked says why a call cannot start now, or "" when it can.
func (f *facade) busyLocked(wait bool) string {
	switch {
	case f.running >= maxCalls:
		return fmt.Sprintf("%d tool calls are in flight, the most this server runs at once; retry when some have returned", f.running)
	case wait && f.waiting >= f.s.maxWaits():
		return fmt.Sprintf("%d waiting calls (shell_open, shell_io, shell_close, tasks_status with waitMs) are in flight, "+
			"the most this server runs at once; retry when one of them has returned, or wait on fewer things at a time", f.waiting)
	}
	return ""
}

// serve runs one tools/call through mcp-go and returns the response to write.
func (f *facade) serve(ctx context.Context, id json.RawMessage, line []byte) (resp any) {
	defer func() {
		// mcp-go recovers a panicking tool handler (WithRecovery); this is for the rest.
		if r := recover(); r != nil {
			f.s.log.Error("tools/call panicked", "panic", r)
			resp = response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("internal error: %v", r)}}
		}
	}()
	return f.s.mcp.HandleMessage(ctx, line)
}

// finish writes a call's response, unless the client cancelled the call.
func (f *facade) finish(id string, c *call, resp any) {
	f.mu.Lock()
	cancelled := c.cancelled
	f.mu.Unlock()
	var line []byte
	if !cancelled { // a cancel that comes while the response is encoded is caught below
		b, err := json.Marshal(resp)
		if err != nil {
			f.s.log.Error("tools/call: cannot encode the response", "err", err)
			b, _ = json.Marshal(response{JSONRPC: "2.0", ID: rawID(id), Error: &rpcError{Code: mcp.INTERNAL_ERROR, Message: "cannot encode the response: " + err.Error()}})
		}
		line = append(b, '\n')
		if c.task {
			line = f.asTask(line)
		}
	}
	f.write(id, c, line)
}

// write ends request id, which c tracks, and writes its response line, unless the client
// cancelled it or Listen is closed. Writing holds wmu, so that no progress notification
// of the request can follow its response.
func (f *facade) write(id string, c *call, line []byte) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.mu.Lock()
	if c.tool {
		f.running--
		if c.wait {
			f.waiting--
		}
	}
	if f.calls[id] == c {
		f.answeredLocked(id)
	}
	skip := c.cancelled || f.closed
	f.mu.Unlock()
	if skip {
		return // the spec: a cancelled request gets no response
	}
	if _, err := f.out.Write(line); err != nil {
		f.s.log.Warn("write response", "err", err)
	}
}

// rawID is a request id back from its jsonKey form.
func rawID(key string) json.RawMessage { return json.RawMessage(key) }

// maxWaits is the cap on waiting calls in flight.
func (s *Server) maxWaits() int {
	if s.cfg.MaxWaits > 0 {
		return s.cfg.MaxWaits
	}
	return defaultMaxWaits
}
