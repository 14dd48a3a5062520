package tasks

import (
	"archive/tar"
	stdgzip "compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// The DAG benchmarks run the same graphs of `true` commands through the engine, through
// GNU make -j and ninja -j (when installed; bench/run installs them), and through a plain
// loop that spawns the same number of processes at the same parallelism (the spawn floor:
// what any scheduler must at least pay). Compare the ns/op of the sub-benchmarks of one
// shape, measured in the same run:
//
//	go test -run '^$' -bench DAG -benchtime 5x ./tasks/
//
// Every runner pays for one shell process a task: the engine runs `bash -c true`, make is
// told SHELL=/bin/bash so it does the same, ninja always uses /bin/sh -c, and the spawn
// floor runs `bash -c true`.

type shape struct {
	name string
	deps [][]int // deps[i] lists the indexes task i depends on; all point to lower indexes
}

func chainShape(n int) shape {
	s := shape{name: fmt.Sprintf("chain-%d", n), deps: make([][]int, n)}
	for i := 1; i < n; i++ {
		s.deps[i] = []int{i - 1}
	}
	return s
}

func fanShape(n int) shape {
	s := shape{name: fmt.Sprintf("fanout-%d", n), deps: make([][]int, n)}
	for i := 1; i < n; i++ {
		s.deps[i] = []int{0}
	}
	return s
}

// layeredShape is n tasks in layers of width, each depending on one to three random
// tasks of the layer before.
func layeredShape(n, width int, seed int64) shape {
	r := rand.New(rand.NewSource(seed))
	s := shape{name: fmt.Sprintf("layered-%d", n), deps: make([][]int, n)}
	for i := width; i < n; i++ {
		layerStart := (i/width - 1) * width
		seen := map[int]bool{}
		for k := 0; k < 1+r.Intn(3); k++ {
			d := layerStart + r.Intn(width)
			if !seen[d] {
				seen[d] = true
				s.deps[i] = append(s.deps[i], d)
			}
		}
	}
	return s
}

func (s shape) spec(command string) Spec {
	spec := Spec{Name: s.name, MaxParallel: runtime.NumCPU()}
	for i, deps := range s.deps {
		t := TaskSpec{ID: fmt.Sprintf("t%d", i), Command: command}
		for _, d := range deps {
			t.DependsOn = append(t.DependsOn, fmt.Sprintf("t%d", d))
		}
		spec.Tasks = append(spec.Tasks, t)
	}
	return spec
}

func (s shape) makefile() string {
	var b strings.Builder
	b.WriteString("SHELL := /bin/bash\n.PHONY: all")
	for i := range s.deps {
		fmt.Fprintf(&b, " t%d", i)
	}
	b.WriteString("\nall:")
	for i := range s.deps {
		fmt.Fprintf(&b, " t%d", i)
	}
	b.WriteString("\n")
	for i, deps := range s.deps {
		fmt.Fprintf(&b, "t%d:", i)
		for _, d := range deps {
			fmt.Fprintf(&b, " t%d", d)
		}
		b.WriteString("\n\t@true\n")
	}
	return b.String()
}

func (s shape) ninjafile() string {
	var b strings.Builder
	b.WriteString("rule run\n  command = true\n")
	for i, deps := range s.deps {
		fmt.Fprintf(&b, "build t%d: phony\nbuild s%d: run", i, i)
		if len(deps) > 0 {
			b.WriteString(" ||")
			for _, d := range deps {
				fmt.Fprintf(&b, " s%d", d)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("build all: phony")
	for i := range s.deps {
		fmt.Fprintf(&b, " s%d", i)
	}
	b.WriteString("\ndefault all\n")
	return b.String()
}

func benchShapes() []shape {
	return []shape{chainShape(200), fanShape(1000), layeredShape(1000, 50, 1)}
}

func BenchmarkDAG(b *testing.B) {
	for _, sh := range benchShapes() {
		b.Run(sh.name+"/engine", func(b *testing.B) { benchEngine(b, sh) })
		b.Run(sh.name+"/make", func(b *testing.B) {
			benchTool(b, "make", sh.makefile(), "Makefile", "-s", "-j", fmt.Sprint(runtime.NumCPU()), "all")
		})
		b.Run(sh.name+"/ninja", func(b *testing.B) {
			benchTool(b, "ninja", sh.ninjafile(), "build.ninja", "-j", fmt.Sprint(runtime.NumCPU()), "--quiet")
		})
		b.Run(sh.name+"/spawn-floor", func(b *testing.B) { benchSpawnFloor(b, sh) })
	}
}

func benchEngine(b *testing.B, sh shape) {
	ws, err := store.OpenWorkspace(store.WorkspaceConfig{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(context.Background(), ws.DBPath())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := db.RegisterRunner(context.Background(), "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Close(context.Background())
	spec := sh.spec("true")
	for b.Loop() {
		sub, err := e.Submit(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		snap, ok, err := e.Wait(context.Background(), sub.Graph.ID, nil, UntilDone)
		if err != nil || !ok || snap.Progress().State() != GraphSucceeded {
			b.Fatalf("graph: %v %v %s", ok, err, snap.Progress().State())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(sh.deps))/1e6, "ms/task")
}

func benchTool(b *testing.B, tool, file, name string, args ...string) {
	if _, err := exec.LookPath(tool); err != nil {
		b.Skipf("%s is not installed (bench/run installs it)", tool)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(file), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if tool == "ninja" {
			os.Remove(filepath.Join(dir, ".ninja_log")) // every run starts from nothing built
		}
		cmd := exec.Command(tool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", tool, err, out)
		}
	}
}

// benchSpawnFloor runs as many `bash -c true` as the shape has tasks, in the same
// dependency order, with the same parallelism, with nothing else: no store, no logs.
func benchSpawnFloor(b *testing.B, sh shape) {
	for b.Loop() {
		n := len(sh.deps)
		done := make([]chan struct{}, n)
		for i := range done {
			done[i] = make(chan struct{})
		}
		slots := make(chan struct{}, runtime.NumCPU())
		var wg sync.WaitGroup
		for i, deps := range sh.deps {
			wg.Go(func() {
				for _, d := range deps {
					<-done[d]
				}
				slots <- struct{}{}
				if err := exec.Command("bash", "-c", "true").Run(); err != nil {
					b.Error(err)
				}
				<-slots
				close(done[i])
			})
		}
		wg.Wait()
	}
}

// BenchmarkSubmit10k measures tasks_run's engine side for a 10,000-task layered graph:
// validation, storing every row, and starting the first tasks. The tasks are cancelled
// between iterations.
func BenchmarkSubmit10k(b *testing.B) {
	ws, err := store.OpenWorkspace(store.WorkspaceConfig{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(context.Background(), ws.DBPath())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, _ := db.RegisterRunner(context.Background(), "bench", time.Hour)
	e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Close(context.Background())
	spec := layeredShape(10000, 100, 2).spec("true")
	for b.Loop() {
		sub, err := e.Submit(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		e.Cancel(context.Background(), sub.Graph.ID, nil, time.Millisecond)
		e.Wait(context.Background(), sub.Graph.ID, nil, UntilDone)
		b.StartTimer()
	}
}

// BenchmarkTailLog reads the last 2 KiB of a 1 KiB log and of a 1 GiB one (sparse but for
// its end): the read seeks, so both should cost the same.
func BenchmarkTailLog(b *testing.B) {
	for _, size := range []int64{1 << 10, 1 << 30} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "task.log")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Truncate(size - 1024); err != nil {
				b.Fatal(err)
			}
			f.WriteAt([]byte(strings.Repeat("log line\n", 1024/9+1)[:1024]), size-1024)
			f.Close()
			for b.Loop() {
				if s, err := TailLog(path, 2048); err != nil || s.Size != size {
					b.Fatal(s.Size, err)
				}
			}
		})
	}
}

// BenchmarkArchive archives a graph whose one task wrote a 64 MiB log of log-like lines:
// the engine's spool, the same work as the engine did before (a hash pass, then
// compress/gzip at its default level), and gzip -1 of the log alone (the floor). Compare
// the sub-benchmarks of one run:
//
//	go test -run '^$' -bench Archive -benchtime 5x ./tasks/
func BenchmarkArchive(b *testing.B) {
	const size = 64 << 20
	dir := b.TempDir()
	src := filepath.Join(dir, "source.log")
	if err := os.WriteFile(src, logLike(size), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := store.OpenWorkspace(store.WorkspaceConfig{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(context.Background(), ws.DBPath())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := db.RegisterRunner(context.Background(), "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	// No ArtifactsDir while the graph runs, so nothing archives it behind the benchmark's
	// back; it is set once the graph finished.
	e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Close(context.Background())
	sub, err := e.Submit(context.Background(), Spec{Tasks: []TaskSpec{{ID: "cat", Command: "cat " + src}}})
	if err != nil {
		b.Fatal(err)
	}
	if snap, ok, err := e.Wait(context.Background(), sub.Graph.ID, nil, UntilDone); err != nil || !ok || snap.Progress().State() != GraphSucceeded {
		b.Fatalf("graph: %v %v", ok, err)
	}
	e.cfg.ArtifactsDir = b.TempDir()
	logPath := e.LogPath(sub.Graph.ID, "cat")

	b.Run("engine", func(b *testing.B) {
		for b.Loop() {
			a, err := e.spool(context.Background(), sub.Graph.ID)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(a.Bytes)/size, "ratio")
		}
		b.SetBytes(size)
	})
	b.Run("stdlib-default", func(b *testing.B) { // what spool did before
		for b.Loop() {
			if _, _, err := hashFile(logPath); err != nil {
				b.Fatal(err)
			}
			f, err := os.Open(logPath)
			if err != nil {
				b.Fatal(err)
			}
			sum := sha256.New()
			counter := &countingWriter{w: sum}
			gz := stdgzip.NewWriter(counter)
			tw := tar.NewWriter(gz)
			if err := writeEntry(tw, "x.log", size, time.Now(), f); err != nil {
				b.Fatal(err)
			}
			tw.Close()
			gz.Close()
			f.Close()
			b.ReportMetric(float64(counter.n)/size, "ratio")
		}
		b.SetBytes(size)
	})
	b.Run("gzip-1", func(b *testing.B) {
		if _, err := exec.LookPath("gzip"); err != nil {
			b.Skip("gzip is not installed")
		}
		for b.Loop() {
			cmd := exec.Command("gzip", "-1", "-c", logPath)
			if err := cmd.Run(); err != nil { // stdout nil: /dev/null
				b.Fatal(err)
			}
		}
		b.SetBytes(size)
	})
}

// logLike returns n bytes of lines that look like a service's log: timestamps, levels,
// ids and durations that vary, words that repeat.
func logLike(n int) []byte {
	r := rand.New(rand.NewSource(1))
	levels := []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	paths := []string{"/api/v1/items", "/api/v1/users", "/healthz", "/api/v2/search", "/static/app.js"}
	out := make([]byte, 0, n+200)
	t := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for len(out) < n {
		t = t.Add(time.Duration(r.Intn(5000)) * time.Microsecond)
		out = fmt.Appendf(out, "%s %-5s request id=%08x path=%s status=%d bytes=%d dur=%.2fms\n",
			t.Format("2006-01-02T15:04:05.000000Z"), levels[r.Intn(len(levels))], r.Uint32(),
			paths[r.Intn(len(paths))], []int{200, 200, 200, 201, 304, 404, 500}[r.Intn(7)], r.Intn(1<<16), r.Float64()*100)
	}
	return out[:n]
}
