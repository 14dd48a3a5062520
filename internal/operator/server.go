package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/pty"
)

// Sessions is what the operator asks of the PTY engine (a *pty.Manager).
type Sessions interface {
	Overview(ctx context.Context) []pty.Info
	Attach(id string, o pty.AttachOptions) (*pty.Viewer, error)
	Ask(ctx context.Context, id string) (*pty.Answer, error)
}

// Config says what a Server serves.
type Config struct {
	// StateDir is the workspace's state directory, where the socket is made.
	StateDir string
	// Sessions are the server's terminal sessions.
	Sessions Sessions
	// Server says who the server is; its RunnerID is RunnerID's when that is set (a
	// runner registers again under a new id when it loses its lease).
	Server   ServerInfo
	RunnerID func() string
	Logger   *slog.Logger

	// requestTimeout replaces the constant of that name (tests: one longer than a test's
	// own bound, so that a wait for it shows).
	requestTimeout time.Duration
	hooks          hooks // tests only
}

// Timings of the server.
const (
	// reconcileEvery is how often a server removes the sockets of servers that are gone.
	reconcileEvery = time.Minute
	// requestTimeout bounds the wait for a connection's first request, and each write to
	// a client: a client that sends nothing, or reads nothing, is let go.
	requestTimeout = 10 * time.Second
	// answerTimeout bounds the wait for the line of an answer: a person typing a password.
	answerTimeout = 10 * time.Minute
	// endTimeout bounds the write of the last message of a view ended by the shutdown.
	endTimeout = time.Second
	// acceptBackoff is the pause after an accept that failed for want of descriptors.
	acceptBackoff = 100 * time.Millisecond
	// maxRequest bounds one request line: the largest is an input of MaxInputBytes, in
	// base64.
	maxRequest = 2*pty.MaxInputBytes + 4096
)

// Server is a server's operator socket: Listen makes it, Close ends it. It owns its
// goroutines (the accept loop, the reconcile loop, two per connection at most) and its
// connections, all ended by Close.
type Server struct {
	cfg            Config
	log            *slog.Logger
	requestTimeout time.Duration
	l              *net.UnixListener
	remove         func() error
	name           string

	ctx    context.Context // cancelled by Close: every connection's handler ends
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[*net.UnixConn]struct{}
	closed bool

	hooks hooks // Config's
}

// hooks let a test hold a connection's goroutines at a point, to order them as a
// scheduler might: nil in a server.
type hooks struct {
	betweenReads func()              // a view's reader has applied a request and is about to read on
	viewEnding   func()              // a view's handler has pulled the reader's deadline in
	frameSending func(*net.UnixConn) // a view's handler is about to write a frame on it
}

// Listen removes the sockets of servers that are gone (Reconcile), then makes this
// server's socket in the state directory (0600; the directory is 0700) and serves it.
func Listen(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	name, err := socketName(cfg.Server.Number, procid.Identify(os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("operator socket: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[*net.UnixConn]struct{}{}, name: name, requestTimeout: cfg.requestTimeout, hooks: cfg.hooks}
	if s.requestTimeout == 0 {
		s.requestTimeout = requestTimeout
	}
	s.reconcile()
	l, remove, err := listenSocket(cfg.StateDir, s.name)
	if err != nil {
		return nil, fmt.Errorf("operator socket: %w", err)
	}
	s.l, s.remove = l, remove
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.acceptLoop() }()
	go func() { defer s.wg.Done(); s.reconcileLoop() }()
	s.log.Debug("operator: listening", "socket", s.name)
	return s, nil
}

// Name is the socket's file name in the state directory.
func (s *Server) Name() string { return s.name }

// Close stops accepting, removes the socket, ends every connection (a view gets an End
// with EndShutdown first) and waits for every goroutine. A person whose terminal has
// stopped reading does not hold it up: once the context is cancelled, every write to a
// client is bounded by endTimeout from now (the one under way too), and a connection
// still open when ctx ends is closed. It is safe to call more than once.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel() // under mu: a wire that sees no cancellation has its deadline pulled in below
	deadline := time.Now().Add(endTimeout)
	for c := range s.conns {
		_ = c.SetWriteDeadline(deadline)
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
	s.mu.Unlock()
	err := errors.Join(s.l.Close(), s.remove())
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	return err
}

func (s *Server) acceptLoop() {
	for {
		c, err := s.l.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Warn("operator: accept failed", "err", err)
			t := time.NewTimer(acceptBackoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		}()
	}
}

func (s *Server) reconcileLoop() {
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.reconcile()
		case <-s.ctx.Done():
			return
		}
	}
}

// reconcile removes the sockets of servers that are gone, and logs what it removed.
func (s *Server) reconcile() {
	removed, err := Reconcile(s.cfg.StateDir)
	if len(removed) > 0 {
		s.log.Info("operator: removed the sockets of servers that are gone", "sockets", removed)
	}
	if err != nil {
		s.log.Warn("operator: could not remove a socket of a server that is gone", "err", err)
	}
}

// info is who this server is now.
func (s *Server) info() ServerInfo {
	in := s.cfg.Server
	if s.cfg.RunnerID != nil {
		in.RunnerID = s.cfg.RunnerID()
	}
	return in
}

// Peer is who connected, as the kernel says.
type Peer struct {
	Pid int // 0 where the system does not say
	Uid int
}

// refusedf is a refusal of the peer.
func refusedf(format string, args ...any) error {
	return &Error{Code: CodeRefused, Message: fmt.Sprintf(format, args...)}
}
