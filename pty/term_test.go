package pty

import (
	"runtime"
	"testing"
)

// TestTerm_memory bounds what a session's terminal side costs at the default size; the
// figure is in BENCHMARKS.md (BenchmarkTermMemory).
func TestTerm_memory(t *testing.T) {
	const n = 8
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	terms := make([]*term, n)
	for i := range terms {
		terms[i] = newTerm(&session{}, DefaultCols, DefaultRows)
		terms[i].emu.Write([]byte("\x1b[?1049hx\x1b[?1049l"))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(terms)
	per := (after.HeapAlloc - before.HeapAlloc) / n
	t.Logf("terminal side at %dx%d: %d bytes per session", DefaultCols, DefaultRows, per)
	if per > 2<<20 {
		t.Errorf("terminal side at %dx%d: %d bytes per session, want under 2 MiB", DefaultCols, DefaultRows, per)
	}
}
