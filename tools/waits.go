package tools

import "encoding/json"

// waitingTools says which tools' calls may wait: for a terminal's output or exit, a
// graph's end, or a close's grace. They count against the server's --max-waits
// (protocol.Config.MayWait). A tool missing here counts as waiting, the safe side;
// TestDispatch_ToolsClassified makes sure none is.
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

// WaitingCalls names the calls that may wait, for the BUSY answer (protocol.Config).
const WaitingCalls = "shell_open, shell_io, shell_close, tasks_status with waitMs"

func always(map[string]json.RawMessage) bool { return true }
func never(map[string]json.RawMessage) bool  { return false }

// positive is a tool that waits when the argument name is a positive number.
func positive(name string) func(map[string]json.RawMessage) bool {
	return func(args map[string]json.RawMessage) bool {
		var n float64
		return json.Unmarshal(args[name], &n) == nil && n > 0
	}
}

// MayWait reports whether a call of the tool with these arguments may wait
// (protocol.Config).
func MayWait(tool string, args map[string]json.RawMessage) bool {
	if waits, ok := waitingTools[tool]; ok {
		return waits(args)
	}
	return true
}
