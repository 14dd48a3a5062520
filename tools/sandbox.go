package tools

import (
	"slices"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/envpolicy"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

// sandboxArgs are the arguments with which shell_open and a tasks_run task tighten the
// server's sandbox for what they start; a looser value is refused (INVALID_ARGUMENT).
type sandboxArgs struct {
	Sandbox sandbox.Mode    `json:"sandbox,omitempty" jsonschema:"Confine further: read-only."`
	Network sandbox.Network `json:"network,omitempty" jsonschema:"off: no IP sockets."`
}

// tightenOnly lists, in the input schema of sandboxArgs at path, the values a call may
// ask for (DESIGN: read-only or workspace-write; network off): the others can only
// restate the server's own setting, which a call gains nothing by naming.
func tightenOnly(in map[string]any, path ...string) {
	setAt(in, append(path, "sandbox"), enumOf(string(sandbox.ReadOnly), string(sandbox.WorkspaceWrite)))
	setAt(in, append(path, "network"), enumOf(string(sandbox.NetworkOff)))
}

// narrow is the policy a call with a runs under.
func (s *Table) narrow(a sandboxArgs) (sandbox.Policy, error) {
	return s.cfg.Sandbox.Narrow(string(a.Sandbox), string(a.Network))
}

// withheldEnv names the variables of the server's environment that a command started with
// env does not inherit (never their values): its own env sets the rest back.
func (s *Table) withheldEnv(env map[string]string) []string {
	return nonNil(envpolicy.Withheld(s.cfg.WithheldEnv, env))
}

// withheldFromAny names the variables withheld from at least one of the commands started
// with envs (a graph's tasks).
func (s *Table) withheldFromAny(envs []map[string]string) []string {
	var names []string
	for _, env := range envs {
		for _, n := range envpolicy.Withheld(s.cfg.WithheldEnv, env) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return nonNil(names)
}

// denialHint is "" or a line for the text of a command that failed under p in cwd: what
// its output shows the sandbox denied, and the flag that would allow it (sandbox.Hint).
func (s *Table) denialHint(p sandbox.Policy, output, cwd string) string {
	if !p.Confined() {
		return ""
	}
	if h := sandbox.Hint(output, p, s.cfg.Sandbox.Roots(p.Mode), cwd); h != "" {
		return "\n" + h
	}
	return ""
}

// sandboxLine says in the text what confines a command and what of the environment it
// was not given.
func sandboxLine(p sandbox.Policy, withheld []string) string {
	line := "sandbox: " + p.String()
	if len(withheld) > 0 {
		line += "; not inherited: " + strings.Join(withheld, ", ")
	}
	return line
}

// sandboxInstructions is the line of the instructions that says how commands are
// confined here.
func sandboxInstructions(l *sandbox.Launcher) string {
	if why := l.Degraded(); why != "" {
		return "Sandbox: " + why + "."
	}
	p := l.Policy()
	switch p.Mode {
	case sandbox.WorkspaceWrite:
		return "Sandbox: commands run " + p.String() + ": they may write only the workspace, the temp directories and build caches; a denied write or connection fails, and the result names the server flag that allows it. Pass sandbox: \"read-only\" or network: \"off\" to confine a command further."
	case sandbox.ReadOnly:
		return "Sandbox: commands run " + p.String() + ": they may write only the temp directories; a denied write or connection fails, and the result names the server flag that allows it."
	}
	if p.Network == sandbox.NetworkOff {
		return "Sandbox: commands may write anywhere but have no network (network off)."
	}
	return "Sandbox: off (--sandbox off): commands run unconfined; pass sandbox: \"workspace-write\" or \"read-only\" to confine one."
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clip(s)
}
