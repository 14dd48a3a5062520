package tasks

import (
	"archive/tar"
	"bufio"
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
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// The DAG benchmarks run the same graphs of `true` commands through the engine, through
// GNU make and ninja (when installed; bench/run installs them) and through a plain loop,
// all with 2 slots (the "2 slots": -j2, MaxParallel 2), so that they compare the
// same work whatever the machine. Compare the ns/op of the runners of one shape, measured
// in the same run:
//
//	go test -run '^$' -bench DAG -benchtime 5x ./tasks/
//
// Each benchmark is BenchmarkDAG/<shape>/<runner>; the shapes are chain-200 (each task
// depends on the one before), fanout-1000 (one task, then 999 that depend on it only:
// 1000 independent tasks) and layered-1000; the runners:
//
//	engine       the engine in-process running `true` as a user writes it; it execs a
//	             plain command without a shell (direct.go), one process a task
//	make-shell   make -j2 with SHELL=/bin/bash and the recipe `true;`, so make runs bash for
//	             every task: THE target baseline (issue 17: the engine at <= 1.0x of it on
//	             fanout-1000, <= 1.1x on chain-200). It is the target because it is what a
//	             user's Makefile of shell recipes costs, the job the engine replaces.
//	make-direct  make -j2 with the recipe `true`: make execs it without a shell, as the
//	             engine does; the floor for a scheduler that forks once a task
//	ninja-sh     ninja -j2 with `command = true`: ninja always runs /bin/sh -c, and dash
//	             execs the last command in place, so one fork and two execs a task
//	ninja-bash   ninja -j2 with `command = bash -c true`: a shell per task, as make-shell
//	spawn-floor  a Go loop exec'ing `true` in dependency order, 2 at a time, with no store
//	             and no logs: what the engine must at least pay
//
// The figure that matters is a ratio of two runners of the same run (the machine is
// shared and noisy): engine ÷ make-shell. Every runner also reports ms/task; the engine
// reports cpu-ms/task too, its own CPU (not its children's) per task, which the machine's
// load moves far less than the time, so it compares two builds of the engine best.

// benchSlots is the parallelism of every runner.
const benchSlots = 2

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
	spec := Spec{Name: s.name, MaxParallel: benchSlots}
	for i, deps := range s.deps {
		t := TaskSpec{ID: fmt.Sprintf("t%d", i), Command: command}
		for _, d := range deps {
			t.DependsOn = append(t.DependsOn, fmt.Sprintf("t%d", d))
		}
		spec.Tasks = append(spec.Tasks, t)
	}
	return spec
}

// makefile is the shape as a Makefile whose every recipe is recipe; with shell set, make
// runs each recipe with that shell.
func (s shape) makefile(shell, recipe string) string {
	var b strings.Builder
	if shell != "" {
		fmt.Fprintf(&b, "SHELL := %s\n", shell)
	}
	b.WriteString(".PHONY: all")
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
		fmt.Fprintf(&b, "\n\t@%s\n", recipe)
	}
	return b.String()
}

// ninjafile is the shape as a build.ninja whose every edge runs command (through /bin/sh
// -c, as ninja always does).
func (s shape) ninjafile(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rule run\n  command = %s\n", command)
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
	j := fmt.Sprint(benchSlots)
	for _, sh := range benchShapes() {
		b.Run(sh.name+"/engine", func(b *testing.B) { benchEngine(b, sh) })
		b.Run(sh.name+"/make-shell", func(b *testing.B) {
			benchTool(b, sh, "make", sh.makefile("/bin/bash", "true;"), "Makefile", "-s", "-j", j, "all")
		})
		b.Run(sh.name+"/make-direct", func(b *testing.B) {
			benchTool(b, sh, "make", sh.makefile("", "true"), "Makefile", "-s", "-j", j, "all")
		})
		b.Run(sh.name+"/ninja-sh", func(b *testing.B) {
			benchTool(b, sh, "ninja", sh.ninjafile("true"), "build.ninja", "-j", j, "--quiet")
		})
		b.Run(sh.name+"/ninja-bash", func(b *testing.B) {
			benchTool(b, sh, "ninja", sh.ninjafile("bash -c true"), "build.ninja", "-j", j, "--quiet")
		})
		b.Run(sh.name+"/spawn-floor", func(b *testing.B) { benchSpawnFloor(b, sh) })
	}
}

// reportPerTask adds the time per task, which reads the same across shapes.
func reportPerTask(b *testing.B, sh shape) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(sh.deps))/1e6, "ms/task")
}

func benchEngine(b *testing.B, sh shape) {
	ws, db, r := benchStore(b)
	e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws, MaxParallel: benchSlots,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Close(context.Background())
	spec := sh.spec("true")
	// One graph of the same shape first, untimed: bench/gobench.mjs runs each
	// sub-benchmark as a process of its own with -benchtime 1x, and the first graph an
	// engine runs also pays for what a server does once (the pool's connections opened,
	// their statements prepared, the logs directory made). A server runs many graphs;
	// its start is measured on its own (bench/startup.mjs).
	runBenchGraph(b, e, spec)
	cpu0 := selfCPU()
	for b.Loop() {
		runBenchGraph(b, e, spec)
	}
	reportPerTask(b, sh)
	// The engine's own CPU (this process's, not its children's) per task: what it costs
	// beside the tasks, and a figure that the machine's load moves far less than time.
	b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N)/float64(len(sh.deps))/1e6, "cpu-ms/task")
}

// runBenchGraph submits spec and waits until it has succeeded.
func runBenchGraph(b *testing.B, e *Engine, spec Spec) {
	b.Helper()
	sub, err := e.Submit(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	snap, ok, err := e.Wait(context.Background(), sub.Graph.ID, nil, UntilDone)
	if err != nil || !ok || snap.Progress().State() != GraphSucceeded {
		b.Fatalf("graph: %v %v %s", ok, err, snap.Progress().State())
	}
}

// benchStore opens a store on a new workspace and registers a runner in it; the store is
// closed when the benchmark ends.
func benchStore(b *testing.B) (*workspace.Workspace, *store.DB, store.Runner) {
	b.Helper()
	ws, err := workspace.Open(workspace.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(context.Background(), ws.DBPath())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	r, err := db.RegisterRunner(context.Background(), "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return ws, db, r
}

// selfCPU is the CPU time this process has used, user and system, without its children.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchTool(b *testing.B, sh shape, tool, file, name string, args ...string) {
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
	reportPerTask(b, sh)
}

// benchSpawnFloor runs as many `true` as the shape has tasks, exec'd without a shell as
// the engine does, in the same dependency order, benchSlots at a time, with nothing else:
// no store, no logs.
func benchSpawnFloor(b *testing.B, sh shape) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		n := len(sh.deps)
		done := make([]chan struct{}, n)
		for i := range done {
			done[i] = make(chan struct{})
		}
		slots := make(chan struct{}, benchSlots)
		var wg sync.WaitGroup
		for i, deps := range sh.deps {
			wg.Go(func() {
				for _, d := range deps {
					<-done[d]
				}
				slots <- struct{}{}
				if err := exec.Command(truePath).Run(); err != nil {
					b.Error(err)
				}
				<-slots
				close(done[i])
			})
		}
		wg.Wait()
	}
	reportPerTask(b, sh)
}

// BenchmarkLoudTask runs one task that prints 200 MB and reports the engine's own CPU
// for it (this process's, not the task's): what moving a task's output into its log costs
// the server. The log must come out whole, so a copy that drops output does not look cheap.
//
//	go test -run '^$' -bench LoudTask -benchtime 5x ./tasks/
func BenchmarkLoudTask(b *testing.B) {
	const size = 200_000_000
	ws, db, r := benchStore(b)
	e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Close(context.Background())
	// A plain command: the engine execs head itself (direct.go), so no shell runs.
	spec := Spec{Tasks: []TaskSpec{{ID: "loud", Command: fmt.Sprintf("head -c %d /dev/zero", size)}}}
	var cpu time.Duration
	child0 := childrenCPU()
	for b.Loop() {
		cpu0 := selfCPU()
		sub, err := e.Submit(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		snap, ok, err := e.Wait(context.Background(), sub.Graph.ID, nil, UntilDone)
		if err != nil || !ok || snap.Progress().State() != GraphSucceeded {
			b.Fatalf("graph: %v %v %s", ok, err, snap.Progress().State())
		}
		cpu += selfCPU() - cpu0
		if fi, err := os.Stat(e.LogPath(sub.Graph.ID, "loud")); err != nil || fi.Size() != size {
			b.Fatalf("the log: %v, %v; want %d bytes", fi, err, size)
		}
		b.StopTimer()
		os.RemoveAll(filepath.Dir(e.LogPath(sub.Graph.ID, "loud"))) // keep the disk free, off the CPU count
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
	// The task's CPU beside it: writing to a file costs the same copy into the page cache
	// whichever process makes it, so what one saves the other may pay.
	b.ReportMetric(float64(childrenCPU()-child0)/float64(b.N)/1e6, "task-cpu-ms/op")
	b.SetBytes(size)
}

// childrenCPU is the CPU time, user and system, of this process's children reaped so far.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSubmit10k measures tasks_run's engine side for a 10,000-task layered graph:
// validation, storing every row, and starting the first tasks. The tasks are cancelled
// between iterations.
func BenchmarkSubmit10k(b *testing.B) {
	ws, db, r := benchStore(b)
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

// BenchmarkTailLines reads tails of a 200 MB log of real lines, as tasks_status does: the
// last 20 and 1000 lines (logLines) beside the default byte tail (logTail 2048). Each
// reads backwards from the end, so a lines tail costs what its lines do, not the log.
func BenchmarkTailLines(b *testing.B) {
	path := filepath.Join(b.TempDir(), "task.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var size int64
	for i := 0; size < 200<<20; i++ {
		n, _ := fmt.Fprintf(w, "2026-12-02T03:00:00Z step %d: compiling package p%d ok\n", i, i%97)
		size += int64(n)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for _, bc := range []struct {
		name string
		read func() (LogSlice, error)
	}{
		{"bytes-2048", func() (LogSlice, error) { return TailLog(path, DefaultLogTail) }},
		{"lines-20", func() (LogSlice, error) { return TailLines(path, 20, MaxLogTail) }},
		{"lines-1000", func() (LogSlice, error) { return TailLines(path, MaxLogLines, MaxLogTail) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if s, err := bc.read(); err != nil || s.Size != size || s.Text == "" {
					b.Fatal(s.Size, err)
				}
			}
		})
	}
}

// BenchmarkArchive archives a graph whose one task wrote a 64 MiB log, of two kinds:
// "text", log-like lines, and "base64", base64 of random bytes (high-entropy text, which
// level 1 cannot shrink). For each: the engine's spool as it is ("engine": the level
// chosen per log), the same with level 1 for every log as before ("engine-level1"), the
// work the engine did before that (a hash pass, then compress/gzip at its default level),
// and gzip -1 of the log alone (the floor). Compare the sub-benchmarks of one kind, in one
// run:
//
//	go test -run '^$' -bench Archive -benchtime 5x ./tasks/
func BenchmarkArchive(b *testing.B) {
	const size = 64 << 20
	ws, db, r := benchStore(b)
	// No ArtifactsDir while the graphs run, so nothing archives them behind the
	// benchmark's back; it is set once they finished.
	e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Close(context.Background())
	dir := b.TempDir()
	kinds := []struct {
		name string
		data func(int) []byte
	}{{"text", logLike}, {"base64", randomBase64}}
	graphs := make([]string, len(kinds))
	for i, k := range kinds {
		src := filepath.Join(dir, k.name+".log")
		if err := os.WriteFile(src, k.data(size), 0o644); err != nil {
			b.Fatal(err)
		}
		sub, err := e.Submit(context.Background(), Spec{Tasks: []TaskSpec{{ID: "cat", Command: "cat " + src}}})
		if err != nil {
			b.Fatal(err)
		}
		if snap, ok, err := e.Wait(context.Background(), sub.Graph.ID, nil, UntilDone); err != nil || !ok || snap.Progress().State() != GraphSucceeded {
			b.Fatalf("graph: %v %v", ok, err)
		}
		graphs[i] = sub.Graph.ID
	}
	e.cfg.ArtifactsDir = b.TempDir()

	for i, k := range kinds {
		graphID, logPath := graphs[i], e.LogPath(graphs[i], "cat")
		spool := func(b *testing.B, perLog bool) {
			levelPerLog = perLog
			defer func() { levelPerLog = true }()
			for b.Loop() {
				a, err := e.spool(context.Background(), graphID)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(a.Bytes)/size, "ratio")
			}
			b.SetBytes(size)
		}
		b.Run(k.name+"/engine", func(b *testing.B) { spool(b, true) })
		b.Run(k.name+"/engine-level1", func(b *testing.B) { spool(b, false) })
		b.Run(k.name+"/stdlib-default", func(b *testing.B) { // what spool did before klauspost
			for b.Loop() {
				if _, _, err := archive.HashFile(logPath); err != nil {
					b.Fatal(err)
				}
				f, err := os.Open(logPath)
				if err != nil {
					b.Fatal(err)
				}
				sum := sha256.New()
				counter := &byteCounter{w: sum}
				gz := stdgzip.NewWriter(counter)
				tw := tar.NewWriter(gz)
				if err := archive.WriteEntry(tw, "x.log", size, time.Now(), f); err != nil {
					b.Fatal(err)
				}
				tw.Close()
				gz.Close()
				f.Close()
				b.ReportMetric(float64(counter.n)/size, "ratio")
			}
			b.SetBytes(size)
		})
		b.Run(k.name+"/gzip-1", func(b *testing.B) {
			if _, err := exec.LookPath("gzip"); err != nil {
				b.Skip("gzip is not installed")
			}
			out := filepath.Join(dir, "out.gz")
			for b.Loop() {
				o, err := os.Create(out) // a file, so gzip writes straight to it
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command("gzip", "-1", "-c", logPath)
				cmd.Stdout = o
				err = cmd.Run()
				o.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			if fi, err := os.Stat(out); err == nil {
				b.ReportMetric(float64(fi.Size())/size, "ratio")
			}
			b.SetBytes(size)
		})
	}
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

// byteCounter counts what is written through it, for a ratio.
type byteCounter struct {
	w io.Writer
	n int64
}

func (c *byteCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// BenchmarkHeldTask measures what the engine holds for each pending task of a big graph
// (issue 29): 100,000 tasks behind a gate task that sleeps, submitted to a fresh engine,
// the Go heap in use after a collection before and after the submit, divided by the tasks.
// The spec submitted is live in both, so what is counted is what the submit added: the
// engine's graph, and whatever Submit returned. Measured with -benchtime 3x: 788.8 bytes a
// task at 81afa7d (a TaskRow and the scheduler's fields, a map entry, strings, and the copy
// of every task Submit then returned), 168.4 after stop 37.
//
//	go test -run '^$' -bench HeldTask -benchtime 3x ./tasks/
func BenchmarkHeldTask(b *testing.B) {
	const n = 100_000
	spec := Spec{Tasks: make([]TaskSpec, n)}
	spec.Tasks[0] = TaskSpec{ID: "gate", Command: "sleep 3600"}
	for i := 1; i < n; i++ {
		spec.Tasks[i] = TaskSpec{ID: fmt.Sprintf("t%d", i), Command: "true", DependsOn: []string{"gate"}}
	}
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	for b.Loop() {
		// A fresh engine each time: a graph cancelled before is dropped in the background.
		ws, db, r := benchStore(b)
		e := NewEngine(Config{DB: db, RunnerID: r.ID, Workspace: ws, Limits: Limits{MaxTasks: n},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		<-e.started
		before := heap()
		sub, err := e.Submit(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heap()-before)/n, "B/task")
		if _, err := e.Cancel(context.Background(), sub.Graph.ID, nil, 0); err != nil {
			b.Fatal(err)
		}
		e.Close(context.Background())
		db.Close()
	}
	runtime.KeepAlive(spec)
}
