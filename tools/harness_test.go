package tools

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// testConfig is what a test sets of the tools' Config and of the engines under them.
type testConfig struct {
	Config
	Workspace                          string
	MaxSessions, MaxParallel, MaxTasks int
}

// testServer is the tool table on a store and engines of its own, opened the way
// internal/server opens them, so that the tools' tests need no server around them.
type testServer struct {
	*Table
	db     *store.DB
	runner store.Runner
	once   sync.Once
}

// openTestServer opens cfg's workspace, its store and engines, and the table over them.
func openTestServer(ctx context.Context, cfg testConfig) (*testServer, error) {
	ws, err := workspace.Open(workspace.Config{Dir: cfg.Workspace})
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, ws.DBPath())
	if err != nil {
		return nil, err
	}
	runner, err := db.RegisterRunner(ctx, "test", tasks.DefaultLease)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &testServer{db: db, runner: runner}
	s.Table = NewTable(cfg.Config, ws, func(context.Context) error { return nil })
	engine := tasks.NewEngine(tasks.Config{
		DB: db, Workspace: ws, RunnerID: runner.ID, MaxParallel: cfg.MaxParallel,
		Limits: tasks.Limits{MaxTasks: cfg.MaxTasks}, Logger: s.log, ArtifactsDir: ws.ArtifactsDir,
		Lease: tasks.DefaultLease, Version: "test", SubmitWait: s.cfg.MaxWait,
	})
	shells := pty.NewManager(pty.Config{MaxSessions: cfg.MaxSessions, Recorder: recorder{db, engine.RunnerID}, Logger: s.log})
	s.Start(shells, engine)
	return s, nil
}

// Close stops the engines and closes the store, once.
func (s *testServer) Close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		err = errors.Join(s.tasks.Close(ctx), s.shells.Shutdown(ctx), s.db.StopRunner(ctx, s.tasks.RunnerID()), s.db.Close())
	})
	return err
}

// recorder keeps the store's row per PTY session, as the server's does.
type recorder struct {
	db       *store.DB
	runnerID func() string
}

func (r recorder) SessionOpened(ctx context.Context, rec pty.Record) error {
	return r.db.InsertSession(ctx, store.SessionRow{
		RunnerID: r.runnerID(), ID: rec.ID, Name: rec.Name, Command: rec.Command, Cwd: rec.Dir,
		Identity: procid.Identify(rec.Pid), Pgid: rec.Pgid, StartedAt: rec.StartedAt,
	})
}

func (r recorder) SessionClosed(ctx context.Context, id string) error {
	return r.db.CloseSession(ctx, r.runnerID(), id)
}

// closeServer closes a server in a cleanup, where t.Context() is already cancelled.
func closeServer(s *testServer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Close(ctx)
}

// newTestServer opens a server on a fresh workspace; Close runs at cleanup.
func newTestServer(t *testing.T, mutate ...func(*testConfig)) *testServer {
	t.Helper()
	cfg := testConfig{Config: Config{Logger: discardLogger(), MaxWait: 30 * time.Second}, Workspace: t.TempDir()}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := openTestServer(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeServer(s); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
