package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkMake_ThisRepository snapshots this repository as a Kubernetes task's pod gets
// it (git: tracked and untracked files not ignored), once per graph: its size and the
// time it takes, as BENCHMARKS.md reports them.
//
//	go test -run '^$' -bench Make_ThisRepository -benchtime 5x ./tasks/snapshot/
func BenchmarkMake_ThisRepository(b *testing.B) {
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		b.Skip("not in the repository:", err)
	}
	dir := b.TempDir()
	var s Snapshot
	var took time.Duration
	for b.Loop() {
		t0 := time.Now()
		if s, err = Make(b.Context(), Options{Root: root, Mode: Git, Dir: dir, Exclude: []string{filepath.Join(root, ".mcp-harness")}}); err != nil {
			b.Fatal(err)
		}
		took += time.Since(t0)
	}
	b.ReportMetric(float64(s.Bytes)/1e6, "MB")
	b.ReportMetric(float64(s.Size)/1e6, "MB-files")
	b.ReportMetric(float64(s.Files), "files")
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms")
	b.Logf("%s snapshot of %s: %d files, %d bytes of content, %d bytes compressed, %s",
		s.Mode, root, s.Files, s.Size, s.Bytes, (took / time.Duration(b.N)).Round(time.Millisecond))
}
