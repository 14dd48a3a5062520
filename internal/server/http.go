package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/httpauth"
	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/tools"
)

// HTTPConfig is what `mcp-harness http` adds to Config: where it listens and who it
// lets in.
type HTTPConfig struct {
	Listen   string // host:port
	Endpoint string // the MCP endpoint's path; "" is DefaultEndpoint
	// Auth says how clients are authenticated (httpauth.Config); TokenFile "" is
	// <state-dir>/DefaultTokenFile. Loopback, Endpoint and Logger are set here.
	Auth httpauth.Config
	// TLSCert and TLSKey serve HTTPS; a listen address other than loopback needs them,
	// or InsecureHTTP.
	TLSCert, TLSKey string
	InsecureHTTP    bool
	// Started, if set, is told the endpoint's URL and a line on how clients authenticate,
	// once the server listens (the command prints them: the start line).
	Started func(url, auth string)
}

const (
	// DefaultEndpoint is the MCP endpoint's path.
	DefaultEndpoint = "/mcp"
	// DefaultTokenFile is the token file's name in the state directory.
	DefaultTokenFile = "http-token"
)

// HTTP timeouts. A request's headers must come within readHeaderTimeout (a client that
// opens connections and sends nothing holds no goroutine for long), its body within
// readTimeout (8 MiB on a slow link), and an idle keep-alive connection is closed after
// idleTimeout. An answer may take --max-wait to come, then writeSlack to be written.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = time.Minute
	idleTimeout       = 2 * time.Minute
	writeSlack        = time.Minute
	maxHeaderBytes    = 64 << 10
)

// ErrInsecureListen refuses plain HTTP on an address other than loopback.
var ErrInsecureListen = errors.New("a listen address other than loopback needs --tls-cert and --tls-key")

// CheckListen checks a listen address against the TLS settings before anything starts:
// plain HTTP off loopback only with InsecureHTTP, and --auth none only on loopback.
func CheckListen(h HTTPConfig) error {
	if _, _, err := net.SplitHostPort(h.Listen); err != nil {
		return fmt.Errorf("--listen %q: want host:port, such as 127.0.0.1:7433", h.Listen)
	}
	tlsOn := h.TLSCert != "" || h.TLSKey != ""
	if tlsOn && (h.TLSCert == "" || h.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	loopback := httpauth.IsLoopback(h.Listen)
	if !loopback && !tlsOn && !h.InsecureHTTP {
		return fmt.Errorf("--listen %s: %w (or --insecure-http, behind a proxy that terminates TLS)", h.Listen, ErrInsecureListen)
	}
	if h.Auth.Mode == httpauth.ModeNone && !loopback {
		return fmt.Errorf("--auth none is only for a loopback listen address (127.0.0.1, ::1, localhost): anyone who reaches %s could run commands as you", h.Listen)
	}
	return nil
}

// ServeHTTP runs the server for clients over Streamable HTTP on h.Listen until ctx is
// cancelled (the command cancels it on SIGTERM or SIGINT), then shuts down cleanly: new
// requests are refused (503), the calls in flight are cancelled and answered
// (SHUTTING_DOWN), the engines stop as for stdio, within shutdownTimeout. One runner
// serves every client. Unlike stdio it opens the store before it listens: a workspace
// whose state cannot be opened (other than for a held lock) is an error at start. A
// failure to listen, read the TLS key pair, the token file, or the OAuth issuer's keys is
// returned before anything is served. cfg.Abort works as for Serve.
func ServeHTTP(ctx context.Context, cfg Config, h HTTPConfig) error {
	if err := CheckListen(h); err != nil {
		return err
	}
	setMemoryLimit(cfg)
	cfg.UnguessableIDs = true
	srv, err := newServer(cfg)
	if err != nil {
		return err
	}
	if err := srv.ready(ctx); err != nil {
		var busy interface{ Busy() bool }
		if !errors.As(err, &busy) || !busy.Busy() {
			srv.closeAfterFailedStart(ctx)
			return err
		}
		// Another process holds the database's lock: calls answer BUSY and open it again.
	}
	if h.Auth.Mode == httpauth.ModeToken || h.Auth.Mode == "" {
		if h.Auth.TokenFile == "" {
			h.Auth.TokenFile = filepath.Join(srv.ws.StateDir, DefaultTokenFile)
		}
	}
	_, statErr := os.Stat(h.Auth.TokenFile)
	tokenMade := h.Auth.TokenFile != "" && errors.Is(statErr, fs.ErrNotExist)
	if h.InsecureHTTP && h.TLSCert == "" && !httpauth.IsLoopback(h.Listen) {
		srv.log.Warn("serving plain HTTP on " + h.Listen + " (--insecure-http): the bearer token, and everything the tools send and print, " +
			"cross the network in clear text, and whoever can see it can take the token and run commands as you; use it only behind a proxy that terminates TLS on this machine or a network you trust")
	}
	ln, hs, guard, stopAuth, err := srv.listenHTTP(ctx, h)
	if err != nil {
		srv.closeAfterFailedStart(ctx)
		return err
	}
	defer stopAuth()
	if tokenMade {
		srv.log.Info("made the token file", "path", h.Auth.TokenFile)
	}
	mcp := protocol.NewHTTPHandler(ctx, protocol.HTTPConfig{
		Session: protocol.Config{MCP: srv.mcp, Logger: srv.log, MayWait: tools.MayWait, WaitingCalls: tools.WaitingCalls,
			MaxWaits: cfg.MaxWaits, Tasks: srv.tasksExtension()},
		ReadOnlyTool: tools.ReadOnly,
		Allowed:      guard.Allowed,
	})
	hs.Handler = guard.Handler(mcp)

	served := make(chan error, 1)
	go func() {
		if h.TLSCert != "" {
			served <- hs.ServeTLS(ln, "", "")
		} else {
			served <- hs.Serve(ln)
		}
	}()
	if h.Started != nil {
		h.Started(endpointURL(ln.Addr(), h), authLine(h))
	}
	srv.log.Info("serving MCP over HTTP", "listen", ln.Addr().String(), "auth", h.Auth.Mode)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	done := make(chan error, 1)
	go func() { done <- srv.shutdownHTTP(context.WithoutCancel(ctx), hs, mcp) }()
	select {
	case err := <-done:
		if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			return serveErr
		}
		return err
	case <-cfg.Abort: // a nil channel: never
		srv.Abort(abortTimeout)
		return ErrAborted
	}
}

// listenHTTP makes what ServeHTTP serves with: the listener, the http.Server (its
// handler is set by the caller) and the guard, and a func that ends the guard's key
// refresh.
func (s *Server) listenHTTP(ctx context.Context, h HTTPConfig) (net.Listener, *http.Server, *httpauth.Guard, func(), error) {
	if h.Endpoint == "" {
		h.Endpoint = DefaultEndpoint
	}
	auth := h.Auth
	auth.Loopback = httpauth.IsLoopback(h.Listen)
	auth.Endpoint = h.Endpoint
	auth.Logger = s.log
	authCtx, stopAuth := context.WithCancel(context.WithoutCancel(ctx))
	guard, err := httpauth.New(authCtx, auth)
	if err != nil {
		stopAuth()
		return nil, nil, nil, nil, err
	}
	hs := &http.Server{
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      s.cfg.MaxWait + writeSlack,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if h.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(h.TLSCert, h.TLSKey)
		if err != nil {
			stopAuth()
			return nil, nil, nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	ln, err := net.Listen("tcp", h.Listen)
	if err != nil {
		stopAuth()
		return nil, nil, nil, nil, err
	}
	return ln, hs, guard, stopAuth, nil
}

// shutdownHTTP stops serving and shuts the server down, within shutdownTimeout: the
// transport first (new requests 503, calls in flight cancelled and answered), while the
// http.Server stops listening and waits for the handlers to write those answers; then
// the engines, as Serve's shutdown.
func (s *Server) shutdownHTTP(ctx context.Context, hs *http.Server, mcp *protocol.HTTPHandler) error {
	ctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
	defer cancel()
	s.log.Info("shutting down the HTTP server")
	var wg sync.WaitGroup
	wg.Go(mcp.Shutdown)
	var httpErr error
	wg.Go(func() {
		if httpErr = hs.Shutdown(ctx); httpErr != nil {
			hs.Close() // the deadline passed: cut the connections left
		}
	})
	wg.Wait()
	closeErr := s.Close(ctx)
	if openErr := s.openFailed(); openErr != nil {
		closeErr = openErr
	}
	if closeErr != nil {
		return closeErr
	}
	if httpErr != nil && !errors.Is(httpErr, context.DeadlineExceeded) {
		return httpErr
	}
	return nil
}

// closeAfterFailedStart closes what a start that failed had opened.
func (s *Server) closeAfterFailedStart(ctx context.Context) {
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := s.Close(closeCtx); err != nil {
		s.log.Warn("closing after a failed start", "err", err)
	}
}

// tasksExtension is the MCP Tasks extension when --mcp-tasks asks for it, else nil.
func (s *Server) tasksExtension() *protocol.TasksExtension {
	if !s.cfg.MCPTasks {
		return nil
	}
	return s.table.TasksExtension()
}

// endpointURL is the URL clients reach the endpoint at, from the address listened on.
func endpointURL(addr net.Addr, h HTTPConfig) string {
	scheme := "http"
	if h.TLSCert != "" {
		scheme = "https"
	}
	endpoint := h.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return scheme + "://" + addr.String() + endpoint
}

// authLine says how clients authenticate, for the start line.
func authLine(h HTTPConfig) string {
	switch h.Auth.Mode {
	case httpauth.ModeOAuth:
		return fmt.Sprintf("auth: OAuth bearer JWTs from %s for %s", h.Auth.Issuer, h.Auth.Audience)
	case httpauth.ModeNone:
		return "auth: none (loopback only)"
	}
	return "auth: the bearer token in " + h.Auth.TokenFile
}

// StartLine writes the line `mcp-harness http` prints once it listens.
func StartLine(w io.Writer, url, auth string) {
	fmt.Fprintf(w, "mcp-harness: serving MCP at %s (%s)\n", url, auth)
}
