package pty

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// signalNames lists the signals by the names a person (and a model) writes them with;
// syscall.Signal.String gives descriptions ("killed"), which are not names.
var signalNames = []struct {
	sig  syscall.Signal
	name string
}{
	{syscall.SIGHUP, "SIGHUP"},
	{syscall.SIGINT, "SIGINT"},
	{syscall.SIGQUIT, "SIGQUIT"},
	{syscall.SIGILL, "SIGILL"},
	{syscall.SIGTRAP, "SIGTRAP"},
	{syscall.SIGABRT, "SIGABRT"},
	{syscall.SIGBUS, "SIGBUS"},
	{syscall.SIGFPE, "SIGFPE"},
	{syscall.SIGKILL, "SIGKILL"},
	{syscall.SIGUSR1, "SIGUSR1"},
	{syscall.SIGSEGV, "SIGSEGV"},
	{syscall.SIGUSR2, "SIGUSR2"},
	{syscall.SIGPIPE, "SIGPIPE"},
	{syscall.SIGALRM, "SIGALRM"},
	{syscall.SIGTERM, "SIGTERM"},
	{syscall.SIGCHLD, "SIGCHLD"},
	{syscall.SIGCONT, "SIGCONT"},
	{syscall.SIGSTOP, "SIGSTOP"},
	{syscall.SIGTSTP, "SIGTSTP"},
	{syscall.SIGTTIN, "SIGTTIN"},
	{syscall.SIGTTOU, "SIGTTOU"},
	{syscall.SIGURG, "SIGURG"},
	{syscall.SIGXCPU, "SIGXCPU"},
	{syscall.SIGXFSZ, "SIGXFSZ"},
	{syscall.SIGVTALRM, "SIGVTALRM"},
	{syscall.SIGPROF, "SIGPROF"},
	{syscall.SIGWINCH, "SIGWINCH"},
	{syscall.SIGIO, "SIGIO"},
	{syscall.SIGSYS, "SIGSYS"},
}

// SignalName returns the conventional name of sig ("SIGKILL"), or "SIG<n>" for a signal
// without one (real-time signals).
func SignalName(sig syscall.Signal) string {
	for _, s := range signalNames {
		if s.sig == sig {
			return s.name
		}
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// ParseSignal reads a signal name as a person writes it: "SIGTERM", "TERM", "term" or a
// number ("15", "SIG40"), so tools can take the names SignalName reports. An unknown name
// is ErrInvalid, with the valid names in the message.
func ParseSignal(name string) (syscall.Signal, error) {
	const op = "pty.ParseSignal"
	s := strings.ToUpper(strings.TrimSpace(name))
	// A number, bare or as SignalName writes the signals it has no name for ("SIG40").
	if n, err := strconv.Atoi(strings.TrimPrefix(s, "SIG")); err == nil {
		if n < 1 || n > 64 {
			return 0, invalidf(op, "signal number %d is out of range; use 1..64 or a name such as SIGTERM", n)
		}
		return syscall.Signal(n), nil
	}
	if !strings.HasPrefix(s, "SIG") {
		s = "SIG" + s
	}
	for _, sn := range signalNames {
		if sn.name == s {
			return sn.sig, nil
		}
	}
	names := make([]string, len(signalNames))
	for i, sn := range signalNames {
		names[i] = sn.name
	}
	return 0, invalidf(op, "unknown signal %s; use one of %s, or a number 1..64", quote.Short(name), strings.Join(names, ", "))
}
