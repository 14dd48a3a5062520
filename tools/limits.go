package tools

// Limits on what a client sends that are the adapter's own; the engines' are in pty
// (command, env, name, input) and tasks (graph, task, env, idempotencyKey, cursor), and the
// one on a whole message is protocol.MaxLineBytes. The README's table lists them all.
const (
	// maxWaitForBytes bounds a waitFor pattern: a pattern is compiled, and its syntax
	// errors quote it, so a megabyte pattern would cost both.
	maxWaitForBytes = 4096
)
