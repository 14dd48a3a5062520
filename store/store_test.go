package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// TestMain lets the test binary play a second process that opens a database, for the
// concurrent-open test: real processes take real POSIX locks on the file.
func TestMain(m *testing.M) {
	if path := os.Getenv("STORE_TEST_OPEN"); path != "" {
		os.Exit(helperOpen(path))
	}
	os.Exit(m.Run())
}

// helperOpen waits for its standard input to close (the start signal, given to every helper
// at once), then opens the database, registers a runner and takes a server number, which
// it prints.
func helperOpen(path string) int {
	io.Copy(io.Discard, os.Stdin)
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer db.Close()
	if _, err := db.RegisterRunner(ctx, "test", time.Minute); err != nil {
		fmt.Fprintln(os.Stderr, "register:", err)
		return 1
	}
	n, err := db.NextServerNumber(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server number:", err)
		return 1
	}
	fmt.Println(n)
	return 0
}

// schemaVersion is the version Open must migrate to: one per migration file in the source
// tree, counted from the directory rather than from the embedded copy Open itself reads.
func schemaVersion(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v, %v", files, err)
	}
	return len(files)
}

func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), workspace.DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpen_Migrates(t *testing.T) {
	path := filepath.Join(t.TempDir(), workspace.DBFileName)
	for i := 0; i < 2; i++ { // the second open finds the schema current and changes nothing
		db, err := Open(t.Context(), path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		v, err := db.SchemaVersion(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if want := schemaVersion(t); v != want || v < 2 {
			t.Errorf("SchemaVersion() = %d, want %d", v, want)
		}
		var mode string
		if err := db.sql.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
		var fk int
		if err := db.sql.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if fk != 1 {
			t.Errorf("foreign_keys = %d, want 1", fk)
		}
		db.Close()
	}
}

func TestOpen_ErrSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), workspace.DBFileName)
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	newer := schemaVersion(t) + 1
	if _, err := db.sql.Exec(fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = Open(t.Context(), path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open() error = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "upgrade mcp-harness") {
		t.Errorf("error %q does not say how to fix it", err)
	}
	// The refusal must not have touched the newer database.
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != newer {
		t.Errorf("user_version after refusal = %d, want %d", v, newer)
	}
}

// Several processes opening one fresh database at the same instant all come up: no
// migration applied twice, no "database is locked".
func TestOpen_ConcurrentProcesses(t *testing.T) {
	const n = 6
	path := filepath.Join(t.TempDir(), workspace.DBFileName)
	var cmds []*exec.Cmd
	var starts []io.WriteCloser
	outs := make([]*strings.Builder, n)
	numbers := make([]*strings.Builder, n)
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STORE_TEST_OPEN="+path)
		outs[i], numbers[i] = &strings.Builder{}, &strings.Builder{}
		cmd.Stderr, cmd.Stdout = outs[i], numbers[i]
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, starts = append(cmds, cmd), append(starts, w)
	}
	for _, w := range starts { // release them together
		w.Close()
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v: %s", i, err, outs[i])
		}
	}
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runners, err := db.ListRunners(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(runners) != n {
		t.Errorf("runners = %d, want %d", len(runners), n)
	}
	if v, _ := db.SchemaVersion(t.Context()); v != schemaVersion(t) {
		t.Errorf("SchemaVersion() = %d, want %d", v, schemaVersion(t))
	}
	// Each process got a server number of its own: 1..n, in whatever order.
	var got []string
	for _, b := range numbers {
		got = append(got, strings.TrimSpace(b.String()))
	}
	slices.Sort(got)
	if want := []string{"1", "2", "3", "4", "5", "6"}; !slices.Equal(got, want) {
		t.Errorf("server numbers = %q, want %q", got, want)
	}
	if next, err := db.NextServerNumber(t.Context()); err != nil || next != n+1 {
		t.Errorf("NextServerNumber() after %d = %d, %v, want %d", n, next, err, n+1)
	}
}

// Many connections writing at once, each in its own transaction, never surface
// SQLITE_BUSY to the caller.
func TestDB_ConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), workspace.DBFileName)
	var dbs []*DB
	for i := 0; i < 4; i++ {
		db, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for _, db := range dbs {
		for j := 0; j < 5; j++ {
			wg.Go(func() {
				r, err := db.RegisterRunner(t.Context(), "test", time.Minute)
				if err != nil {
					errs <- err
					return
				}
				for k := 0; k < 5; k++ {
					if err := db.RenewLease(t.Context(), r.ID, time.Minute); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestOpen_FileModes(t *testing.T) {
	old := syscall.Umask(0) // the widest umask a user could have
	t.Cleanup(func() { syscall.Umask(old) })

	ws, err := workspace.Open(workspace.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(t.Context(), ws.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.RegisterRunner(t.Context(), "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		ws.StateDir:                              0o700 | os.ModeDir,
		ws.LogsDir():                             0o700 | os.ModeDir,
		ws.ArtifactsDir:                          0o700 | os.ModeDir,
		ws.DBPath():                              0o600,
		ws.DBPath() + "-wal":                     0o600,
		ws.DBPath() + "-shm":                     0o600,
		filepath.Join(ws.StateDir, ".gitignore"): 0o600,
	}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("stat: %v", err)
			continue
		}
		if fi.Mode() != mode {
			t.Errorf("mode of %s = %v, want %v", filepath.Base(path), fi.Mode(), mode)
		}
	}
	b, err := os.ReadFile(filepath.Join(ws.StateDir, ".gitignore"))
	if err != nil || string(b) != "*\n" {
		t.Errorf(".gitignore = %q, %v; want \"*\\n\"", b, err)
	}
}

func TestRunner_Lifecycle(t *testing.T) {
	db := openTestDB(t)
	ctx := t.Context()
	r, err := db.RegisterRunner(ctx, "v1.2.3", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pid != os.Getpid() || r.ProcStart == 0 || !r.Alive() {
		t.Errorf("runner identity = %+v, want this live process", r.Identity)
	}
	if err := db.RenewLease(ctx, r.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetRunner(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.LeaseExpiresAt.After(time.Now().Add(50*time.Minute)) || got.StoppedAt != nil || got.Version != "v1.2.3" {
		t.Errorf("after renew: %+v", got)
	}
	if err := db.StopRunner(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	got, err = db.GetRunner(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.StoppedAt == nil {
		t.Errorf("StoppedAt = nil after StopRunner")
	}
	if err := db.RenewLease(ctx, r.ID, time.Hour); !errors.Is(err, ErrNotFound) {
		t.Errorf("RenewLease of a stopped runner = %v, want ErrNotFound", err)
	}
	if _, err := db.GetRunner(ctx, "r-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRunner(unknown) = %v, want ErrNotFound", err)
	}
}

func TestSessions(t *testing.T) {
	db := openTestDB(t)
	ctx := t.Context()
	r, err := db.RegisterRunner(ctx, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	row := SessionRow{RunnerID: r.ID, ID: "s1", Command: "bash", Cwd: "/", Identity: procid.Identify(os.Getpid()), Pgid: os.Getpid(), StartedAt: time.Now()}
	if err := db.InsertSession(ctx, row); err != nil {
		t.Fatal(err)
	}
	open, err := db.OpenSessions(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].ID != "s1" || !open[0].Alive() {
		t.Fatalf("OpenSessions = %+v, want s1 alive", open)
	}
	if err := db.CloseSession(ctx, r.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if open, _ := db.OpenSessions(ctx, r.ID); len(open) != 0 {
		t.Errorf("OpenSessions after close = %+v, want none", open)
	}
	// A session of an unknown runner violates the foreign key: nothing is stored.
	row.RunnerID = "r-nope"
	if err := db.InsertSession(ctx, row); err == nil {
		t.Errorf("InsertSession with unknown runner succeeded")
	}
}

func TestNewID_Sorted(t *testing.T) {
	prev := ""
	seen := map[string]bool{}
	for i := 0; i < 5000; i++ {
		id := NewID("g-")
		if id <= prev {
			t.Fatalf("NewID() = %q after %q: not increasing", id, prev)
		}
		if len(id) != 18 || seen[id] {
			t.Fatalf("NewID() = %q: bad length or repeated", id)
		}
		seen[id] = true
		prev = id
	}
}
