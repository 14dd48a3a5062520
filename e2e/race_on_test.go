//go:build race

package e2e

// raceEnabled makes the end-to-end binary carry the race detector when the tests do, so
// the server's own goroutines are checked too (and the build shares the test's cache).
const raceEnabled = true
