package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/pty"
)

// The terminal sessions' operator commands: `sessions`, `attach` and `answer` reach the
// servers on a workspace through their operator sockets (internal/operator), which
// every server makes in the state directory. This file is the cobra wiring of `sessions`
// and what the three share: finding the workspace's servers and picking a session. A
// session id names one session on the workspace (s<server>-<k>), so a command asks every
// live server and takes the session only from the server its id names: what a socket
// says is believed only of the server it is (Dial checks who listens), for its own
// number, and of no number two sockets claim (vetAnswers). What a server says is partly
// the agent's (commands, names, prompts): it is printed through printable.
//
// Exit codes as for `tasks`: 0 done (attach: detached, or the program exited), 1 failed
// (no state, no such session, its server gone, refused, connection lost), 2 a
// command-line mistake.

// SessionList is `sessions --json`: the servers on the workspace and their sessions.
type SessionList struct {
	Servers  []ServerEntry      `json:"servers"`
	Sessions []operator.Session `json:"sessions"`
}

// ServerEntry is a server with a socket on the workspace: live (its process runs), with
// what it said of itself (server), or with why it said nothing (error: gone, refused,
// no answer).
type ServerEntry struct {
	Number int                  `json:"number"`
	Pid    int                  `json:"pid"`
	Live   bool                 `json:"live"`
	Server *operator.ServerInfo `json:"server"`
	Error  *string              `json:"error"`
}

// opTimeout bounds a listing of the workspace's servers.
const opTimeout = 10 * time.Second

// findStateDir resolves the workspace's state directory as the tasks commands do: no state,
// no servers.
func (o *workspaceFlags) findStateDir() (string, error) {
	ws, err := workspace.Find(workspace.Config{Dir: o.workspace, StateDir: o.stateDir})
	if errors.Is(err, workspace.ErrNoState) {
		return "", fmt.Errorf("%w: no server has run there (point --workspace or --state-dir at the project the agent works on)", err)
	}
	if err != nil {
		return "", err
	}
	return ws.StateDir, nil
}

// addWorkspaceFlags gives a terminal-session command --workspace and --state-dir, also
// from MCP_HARNESS_WORKSPACE and MCP_HARNESS_STATE_DIR.
func addWorkspaceFlags(cmd *cobra.Command, o *workspaceFlags) {
	cmd.Flags().StringVar(&o.workspace, "workspace", ".", "the project directory the server runs on")
	cmd.Flags().StringVar(&o.stateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return o.fromEnv(cmd) }
}

func newSessionsCmd() *cobra.Command {
	o := &workspaceFlags{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the terminal sessions of every server on the workspace",
		Long: "List the terminal sessions the agent has open on a workspace, across every server on it:\n" +
			"the session id (what attach and answer take), its server, what runs, its size, what it\n" +
			"does now (running, prompt, input, exited), how many people watch it, and when it last\n" +
			"printed or took input. Exits 1 when a live server refused or did not answer (stderr\n" +
			"says which); a server that has gone is only mentioned.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := o.findStateDir()
			if err != nil {
				return err
			}
			list, err := listSessions(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), list)
			} else {
				err = renderSessions(cmd.OutOrStdout(), cmd.ErrOrStderr(), newPalette(cmd.OutOrStdout()), list, time.Now())
			}
			if err != nil {
				return err
			}
			for _, s := range list.Servers {
				if s.Live && s.Error != nil {
					return exitStatus(1) // a live server refused or did not answer: said above
				}
			}
			return nil
		},
	}
	addWorkspaceFlags(cmd, o)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (see the README's shapes)")
	return cmd
}

// listSessions asks every server on the workspace for its sessions.
func listSessions(ctx context.Context, stateDir string) (SessionList, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	out, err := operator.Survey(ctx, stateDir)
	if err != nil {
		return SessionList{}, err
	}
	out = vetAnswers(out)
	list := SessionList{Servers: []ServerEntry{}, Sessions: []operator.Session{}}
	for _, s := range out {
		e := ServerEntry{Number: s.Number, Pid: s.Pid, Live: !errors.Is(s.Err, operator.ErrGone)}
		if s.Err != nil {
			msg := fmt.Sprintf("server %d (pid %d) has gone", s.Number, s.Pid)
			var refused *operator.Error
			switch {
			case errors.As(s.Err, &refused):
				msg = fmt.Sprintf("server %d (pid %d) refused: %s", s.Number, s.Pid, refused.Message)
			case e.Live:
				msg = s.Err.Error()
			}
			e.Error = &msg
		} else {
			info := s.Server
			e.Server = &info
			list.Sessions = append(list.Sessions, s.Sessions...)
		}
		list.Servers = append(list.Servers, e)
	}
	return list, nil
}

// renderSessions is `sessions`: a table of the sessions, and a line on stderr for each
// server that did not answer.
func renderSessions(w, stderr io.Writer, p palette, list SessionList, now time.Time) error {
	for _, s := range list.Servers {
		if s.Error != nil {
			fmt.Fprintf(stderr, "mcp-harness: %s\n", printable(*s.Error))
		}
	}
	if len(list.Sessions) == 0 {
		_, err := fmt.Fprintln(stderr, "mcp-harness: no terminal sessions: no live server on this workspace has one open")
		return err
	}
	rows := make([][]cell, 0, len(list.Sessions))
	for _, s := range list.Sessions {
		rows = append(rows, []cell{
			{printable(s.SessionID), sgrBold},
			{fmt.Sprintf("%d (pid %d)", s.Server.Number, s.Server.Pid), ""},
			{fmt.Sprint(s.Pid), ""},
			{fmt.Sprintf("%dx%d", s.Cols, s.Rows), ""},
			{printable(string(s.State)), sessionStateColor(s.State)},
			{fmt.Sprint(s.Viewers), ""},
			{ago(s.LastActivityAt, now), ""},
			{sessionLabel(s), ""},
		})
	}
	return writeTable(w, p, []string{"SESSION", "SERVER", "PID", "SIZE", "STATE", "VIEWERS", "ACTIVE", "COMMAND"}, rows)
}

func sessionStateColor(s pty.SessionState) string {
	switch s {
	case pty.StateInput:
		return sgrYellow
	case pty.StateRunning:
		return sgrCyan
	case pty.StateExited:
		return sgrDim
	}
	return ""
}

// sessionLabel is what runs in a session, its name first, and what it waits for. All of
// it is the agent's: printable.
func sessionLabel(s operator.Session) string {
	label := s.Command
	if s.Name != "" {
		label = s.Name + ": " + label
	}
	label = shorten(printable(label), 80)
	if w := s.Waiting; w != nil {
		if w.Prompt != "" {
			label += fmt.Sprintf("  (%s at \"%s\")", printable(string(w.Kind)), printable(w.Prompt))
		} else {
			label += fmt.Sprintf("  (%s)", printable(string(w.Kind)))
		}
	}
	return label
}

// ago is how long before now an RFC 3339 time was: "3.2s ago".
func ago(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "-"
	}
	return shortDuration(now.Sub(t)) + " ago"
}

// target is a session an operator command acts on, and the server that holds it.
type target struct {
	session  operator.Session
	endpoint operator.Endpoint
}

// errForeign says that a server listed a session of another server's number.
var errForeign = errors.New("lists a session that is not one of its own")

// errClaimed says that two sockets claim one server number: one of them is not a
// server's (Dial refuses a socket that another process listens on, but the one that
// holds it may be a process of the person's that a command had start it).
var errClaimed = errors.New("claimed by two sockets")

// vetAnswers keeps, of what the servers on the workspace said, only what a server may
// say. A server's sessions carry its number (s<number>-<k>), so one that lists a session
// of another number is not believed, whatever else it says; and a number claimed by two
// live sockets is believed of neither: nothing is sent to either of them. A session is
// then found only at the socket of the server its id names.
func vetAnswers(servers []operator.ServerSessions) []operator.ServerSessions {
	claims := map[int][]string{}
	for _, srv := range servers {
		if !errors.Is(srv.Err, operator.ErrGone) {
			claims[srv.Number] = append(claims[srv.Number], fmt.Sprintf("%s (pid %d)", srv.Name, srv.Pid))
		}
	}
	out := slices.Clone(servers)
	for i := range out {
		srv := &out[i]
		if errors.Is(srv.Err, operator.ErrGone) {
			continue
		}
		if names := claims[srv.Number]; len(names) > 1 {
			srv.Sessions = nil
			srv.Err = fmt.Errorf("server %d is %w: %s; at most one of them is the server's, so neither is used (remove the socket whose process is not the server's)",
				srv.Number, errClaimed, strings.Join(names, " and "))
			continue
		}
		for _, s := range srv.Sessions {
			if n, ok := serverOfID(s.SessionID); !ok || n != srv.Number {
				srv.Sessions = nil
				srv.Err = fmt.Errorf("server %d (pid %d) %w, %q (its own are s%d-<k>): what it says is not used", srv.Number, srv.Pid, errForeign, s.SessionID, srv.Number)
				break
			}
		}
	}
	return out
}

// pickSession finds session id on the workspace, at the socket of the server its id
// names, or, with id "", the most recently active live session for which want holds.
// Whatever it cannot find, it says what there is.
func pickSession(ctx context.Context, stateDir, id string, what string, want func(operator.Session) bool) (target, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	servers, err := operator.Survey(ctx, stateDir)
	if err != nil {
		return target{}, err
	}
	servers = vetAnswers(servers)
	if id != "" {
		return findSession(servers, id)
	}
	var live []target
	for _, srv := range servers {
		var refused *operator.Error
		switch {
		case errors.Is(srv.Err, errClaimed):
			return target{}, fmt.Errorf("no session to %s is picked: %v", what, srv.Err)
		case errors.As(srv.Err, &refused):
			// A server would not say what it has: that is the answer.
			return target{}, fmt.Errorf("server %d (pid %d) refused: %s", srv.Number, srv.Pid, refused.Message)
		}
		for _, s := range srv.Sessions {
			if s.State != pty.StateExited {
				live = append(live, target{s, srv.Endpoint})
			}
		}
	}
	// The newest activity first.
	slices.SortStableFunc(live, func(a, b target) int { return strings.Compare(b.session.LastActivityAt, a.session.LastActivityAt) })
	for _, t := range live {
		if want(t.session) {
			return t, nil
		}
	}
	if len(live) == 0 {
		return target{}, errors.New("no live terminal session on this workspace to " + what)
	}
	return target{}, fmt.Errorf("no session to %s; %s", what, liveList(servers))
}

// findSession finds session id among the vetted servers: at the socket of server
// ServerOf(id) only.
func findSession(servers []operator.ServerSessions, id string) (target, error) {
	n, ok := serverOfID(id)
	if !ok {
		return target{}, fmt.Errorf("no live session %q on this workspace (session ids are s<server>-<k>); %s", id, liveList(servers))
	}
	var gone *operator.ServerSessions
	for i, srv := range servers {
		if srv.Number != n {
			continue
		}
		var refused *operator.Error
		switch {
		case errors.Is(srv.Err, operator.ErrGone):
			gone = &servers[i]
			continue
		case errors.As(srv.Err, &refused):
			return target{}, fmt.Errorf("server %d (pid %d) refused: %s", srv.Number, srv.Pid, refused.Message)
		case errors.Is(srv.Err, errClaimed), errors.Is(srv.Err, errForeign), errors.Is(srv.Err, operator.ErrNotServer):
			return target{}, fmt.Errorf("session %s: %v", id, srv.Err)
		case srv.Err != nil:
			return target{}, fmt.Errorf("session %s is on server %d (pid %d), which did not answer: %v", id, n, srv.Pid, srv.Err)
		}
		for _, s := range srv.Sessions {
			if s.SessionID != id {
				continue
			}
			if s.State == pty.StateExited {
				return target{}, fmt.Errorf("session %s has exited; %s", id, liveList(servers))
			}
			return target{s, srv.Endpoint}, nil
		}
		return target{}, fmt.Errorf("no live session %q on this workspace; %s", id, liveList(servers))
	}
	if gone != nil {
		return target{}, fmt.Errorf("session %s was on server %d (pid %d), which has gone; %s", id, n, gone.Pid, liveList(servers))
	}
	return target{}, fmt.Errorf("no live session %q on this workspace; %s", id, liveList(servers))
}

// serverOfID is the number of the server an id names: its s<number>- prefix, which the
// ids of pty.ServerSessionIDs (s4-2) and of pty.RandomSessionIDs (s4-gq3tm...) both
// carry; false for an id without one.
func serverOfID(id string) (int, bool) {
	if n, ok := pty.ServerOf(id); ok {
		return n, true
	}
	rest, ok := strings.CutPrefix(id, "s")
	num, tail, found := strings.Cut(rest, "-")
	if !ok || !found || tail == "" {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || strconv.Itoa(n) != num {
		return 0, false
	}
	return n, true
}

// liveList names the live sessions on the workspace, with their states.
func liveList(servers []operator.ServerSessions) string {
	var ids []string
	for _, srv := range servers {
		for _, s := range srv.Sessions {
			if s.State != pty.StateExited {
				ids = append(ids, fmt.Sprintf("%s (%s)", printable(s.SessionID), printable(string(s.State))))
			}
		}
	}
	if len(ids) == 0 {
		return "there is no live session (mcp-harness sessions lists them)"
	}
	return "live sessions: " + strings.Join(ids, ", ")
}
