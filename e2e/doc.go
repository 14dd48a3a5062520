// Package e2e holds the end-to-end tests and benchmarks of mcp-harness: TestMain builds
// the binary once (with the race detector when the tests have it), and every test runs it
// as a client, an operator or a signal would, over stdio, its exit status, its files and
// the workspace's store. It has no code of its own beyond this comment.
package e2e
