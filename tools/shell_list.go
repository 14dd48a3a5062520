package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/pty"
)

// shellList is shell_list: the sessions not yet closed.
var shellList = tool[shellListArgs, listResult]{
	name:        "shell_list",
	description: "This server's terminal sessions, oldest first, with their unread output and listening ports.",
	annotations: readOnly,
	waits:       neverWaits,
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a shellListArgs) (listResult, string, error) {
		var infos []pty.Info
		if a.SessionID != "" {
			in, err := s.sessions(ctx).Get(a.SessionID)
			if err != nil {
				return listResult{}, "", err
			}
			infos = []pty.Info{in}
		} else {
			infos = s.sessions(ctx).List()
		}
		out := listResult{Sessions: make([]sessionInfo, 0, len(infos))}
		var text strings.Builder
		fmt.Fprintf(&text, "%d session(s)\n", len(infos))
		for _, in := range infos {
			si := sessionInfo{
				SessionID: in.ID, Name: in.Name, Pid: in.Pid, Command: in.Command, Cwd: in.Dir,
				Cols: in.Cols, Rows: in.Rows, StartedAt: timestamp(in.StartedAt), LastActivityAt: timestamp(in.LastActivityAt),
				programEnd: programEnd{in.Exited, in.ExitCode, in.Signal}, UnreadBytes: in.UnreadBytes,
				Ports: append([]int{}, in.Ports...), Integration: in.Integration, Sandbox: in.Sandbox,
				personFacts: personFacts{Viewers: in.Viewers, PersonTyped: in.PersonTyped},
			}
			label := in.Command
			if in.Name != "" {
				label = in.Name + ": " + in.Command
			}
			fmt.Fprintf(&text, "%s  pid %d  %s  %s unread  %s  (cwd %s)", in.ID, in.Pid,
				exitStatus(in.Exited, in.ExitCode, in.Signal), fmtBytes(in.UnreadBytes), label, in.Dir)
			if len(in.Ports) > 0 {
				fmt.Fprintf(&text, "  ports %s", strings.Trim(fmt.Sprint(in.Ports), "[]"))
			}
			if in.Viewers > 0 {
				fmt.Fprintf(&text, "  %d watching", in.Viewers)
			}
			if in.PersonTyped {
				text.WriteString("  a person typed into it")
			}
			text.WriteString("\n")
			if a.SessionID != "" {
				si.Commands = s.history(in.Commands, &text)
			}
			out.Sessions = append(out.Sessions, si)
		}
		return out, strings.TrimSuffix(text.String(), "\n"), nil
	},
}

type shellListArgs struct {
	SessionID string `json:"sessionId,omitempty" jsonschema:"Only this one, with its command history."`
}

type listResult struct {
	Sessions []sessionInfo `json:"sessions" jsonschema:"The sessions."`
}

type sessionInfo struct {
	SessionID      string `json:"sessionId" jsonschema:"Id for shell_io and shell_close."`
	Name           string `json:"name" jsonschema:"Label given at shell_open."`
	Pid            int    `json:"pid" jsonschema:"Process id."`
	Command        string `json:"command" jsonschema:"What runs."`
	Cwd            string `json:"cwd" jsonschema:"Absolute working directory."`
	Cols           int    `json:"cols" jsonschema:"Terminal width." toolschema:"minimum=1"`
	Rows           int    `json:"rows" jsonschema:"Terminal height." toolschema:"minimum=1"`
	StartedAt      string `json:"startedAt" jsonschema:"RFC 3339 time it started."`
	LastActivityAt string `json:"lastActivityAt" jsonschema:"RFC 3339 time of its last output or input."`
	programEnd
	UnreadBytes int64          `json:"unreadBytes" jsonschema:"Output bytes after the read cursor."`
	Ports       []int          `json:"ports"`
	Sandbox     sandbox.Policy `json:"sandbox" jsonschema:"What confines the program."`
	Integration bool           `json:"integration" jsonschema:"The shell reports its prompts and exit codes: run works."`
	// Commands is null unless shell_list was asked about this one session.
	Commands []historyEntry `json:"commands" toolschema:"nullable"`
	personFacts
}

// historyEntry is a finished shell command as shell_list reports it, with the range of
// its output for shell_io's since and end.
type historyEntry struct {
	commandFacts
	Since  int64 `json:"since"`
	Cursor int64 `json:"cursor"`
}

// history shapes a session's commands for shell_list, newest last, and lists them in
// text. Command lines are cut to a few hundred bytes (the output range says the rest), and
// the oldest commands are left out if the list would not fit the result budget.
func (s *Table) history(cmds []pty.Command, text *strings.Builder) []historyEntry {
	out := make([]historyEntry, 0, len(cmds))
	for _, c := range cmds {
		out = append(out, historyEntry{commandFacts: factsOf(c, clipText(c.Text)), Since: c.Since, Cursor: c.Cursor})
	}
	room := s.maxResult() / 2 // the structured list and its text share the budget with the rest
	for len(out) > 0 && jsonsize.Of(out) > room {
		out = out[1:]
	}
	if left := len(cmds) - len(out); left > 0 {
		fmt.Fprintf(text, "  (%d older commands left out to fit the result)\n", left)
	}
	for _, c := range cmds[len(cmds)-len(out):] {
		fmt.Fprintf(text, "  %s  since=%d end=%d\n", commandStatus(c), c.Since, c.Cursor)
	}
	return out
}
