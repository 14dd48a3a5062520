// Package httpauth decides who may reach mcp-harness over HTTP (mcp-harness http), in
// front of the protocol's Streamable HTTP transport: browsers by their Origin, a loopback
// server by its Host header (DNS rebinding), and every client by a bearer token: the one
// in a token file (token mode, the default), a JWT of an OAuth 2.1 authorization server
// checked against its published keys (oauth mode, the server being a resource server),
// or, on a loopback address only, none. The token's subject is the principal that owns
// the terminal sessions it opens (protocol.WithPrincipal); its scopes say whether it may
// change anything (ScopeRun) or only read (ScopeRead).
//
// Refusals answer as the specs ask: a missing or bad token is 401 with the
// WWW-Authenticate challenge of its scheme (in oauth mode naming the RFC 9728 metadata),
// a token without the scope a request needs is 403 insufficient_scope, a foreign Origin
// or a non-loopback Host on a loopback server is 403, and so is, with --auth none, a
// request that a proxy or tunnel passed on. Nothing refused reaches the MCP endpoint.
package httpauth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
)

// Modes of authentication.
const (
	ModeToken = "token" // a bearer token read from a file
	ModeOAuth = "oauth" // JWTs of an OAuth 2.1 authorization server
	ModeNone  = "none"  // no token; only on a loopback address
)

// Scopes a token may carry: ScopeRead calls the tools that change nothing (tasks_status,
// tasks_list, tasks_graph, shell_list), ScopeRun everything.
const (
	ScopeRead = "harness:read"
	ScopeRun  = "harness:run"
)

// Config says how requests are admitted.
type Config struct {
	Mode string
	// TokenFile is the token's file in token mode (see LoadToken).
	TokenFile string
	// Issuer and Audience are the authorization server whose tokens are taken and this
	// server's own URL as a resource (RFC 8707), which a token's aud must name, in oauth
	// mode.
	Issuer, Audience string
	// AllowOrigins are the origins (scheme://host[:port]) browsers may call from besides
	// the server's own.
	AllowOrigins []string
	// Loopback says the server listens on a loopback address only: the Host header must
	// then be a loopback name.
	Loopback bool
	// Endpoint is the MCP endpoint's path ("/mcp").
	Endpoint string
	// Client fetches the issuer's metadata and keys; nil is a client with a timeout.
	Client *http.Client
	Logger *slog.Logger
}

// Guard admits requests; New makes one.
type Guard struct {
	cfg     Config
	log     *slog.Logger
	origins map[string]bool
	auth    authenticator
}

// authenticator is how one mode tells a request's principal.
type authenticator interface {
	// authenticate returns the principal a request comes from and its scopes, or a
	// refusal (which is answered 401).
	authenticate(r *http.Request) (principal string, scopes []string, refusal *refusal)
	// challenge is the WWW-Authenticate value of a 401 or 403: its scheme and params.
	challenge(params ...string) string
}

// refusal is why a request's credentials are refused: error is the RFC 6750 code
// (invalid_token, or "" when the request had none), description what to fix.
type refusal struct {
	code, description string
}

// New makes the guard of cfg. In oauth mode it reads the issuer's metadata and keys
// first, within ctx (a failure is an error: a server that cannot check tokens must not
// start); their refresh runs until ctx ends. In token mode it reads, or creates, the
// token file.
func New(ctx context.Context, cfg Config) (*Guard, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "/mcp"
	}
	g := &Guard{cfg: cfg, log: cfg.Logger, origins: map[string]bool{}}
	for _, o := range cfg.AllowOrigins {
		norm, err := normalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("--allow-origin %q: %w", o, err)
		}
		g.origins[norm] = true
	}
	var err error
	switch cfg.Mode {
	case ModeToken, "":
		g.auth, err = newTokenAuth(cfg.TokenFile)
	case ModeOAuth:
		g.auth, err = newOAuth(ctx, cfg)
	case ModeNone:
		if !cfg.Loopback {
			return nil, fmt.Errorf("--auth none is only for a loopback listen address (127.0.0.1, ::1, localhost): anyone who reaches the port could run commands as you")
		}
		g.auth = noAuth{}
	default:
		return nil, fmt.Errorf("--auth %q: want token, oauth or none", cfg.Mode)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Handler serves what the guard lets through: the MCP endpoint (mcp), once the request's
// token is checked and its principal set, and in oauth mode the protected resource
// metadata (RFC 9728), which needs no token. Host and Origin are checked first, for
// every path; a CORS preflight from an allowed origin is answered here.
func (g *Guard) Handler(mcp http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(g.cfg.Endpoint, g.authenticated(mcp))
	if o, ok := g.auth.(*oauth); ok {
		for _, p := range o.metadataPaths() {
			mux.HandleFunc(p, o.serveMetadata)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.cfg.Loopback && !loopbackHost(r.Host) {
			g.log.Warn("refused a request: its Host is not a loopback name (DNS rebinding?)", "host", r.Host)
			forbid(w, fmt.Sprintf("Host %q is not a loopback name; this server listens on loopback only (a tunnel must rewrite Host to localhost)", r.Host))
			return
		}
		if g.cfg.Mode == ModeNone && forwarded(r) {
			g.log.Warn("refused a request that came through a proxy or tunnel: --auth none is for this machine only")
			forbid(w, "this server runs with --auth none, which is for clients on this machine only, and this request came through a proxy or tunnel; run it with --auth token or --auth oauth")
			return
		}
		origin := r.Header.Get("Origin")
		if origin != "" {
			if !g.originAllowed(origin, r) {
				g.log.Warn("refused a request from a foreign origin", "origin", origin)
				forbid(w, fmt.Sprintf("Origin %q may not call this server; start it with --allow-origin %s to allow it", origin, origin))
				return
			}
			cors(w, r, origin)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// authenticated checks the request's token: 401 without a good one, else next with the
// principal in the request's context.
func (g *Guard) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, scopes, ref := g.auth.authenticate(r)
		if ref != nil {
			var params []string
			if ref.code != "" {
				params = append(params, "error", ref.code, "error_description", ref.description)
			}
			w.Header().Set("WWW-Authenticate", g.auth.challenge(params...))
			if ref.code != "" {
				g.log.Info("refused a request: bad bearer token", "why", ref.description)
			}
			writeOAuthError(w, http.StatusUnauthorized, orDefault(ref.code, "invalid_request"), orDefault(ref.description, "this server needs a bearer token in the Authorization header"))
			return
		}
		if !slices.Contains(scopes, ScopeRead) && !slices.Contains(scopes, ScopeRun) {
			g.insufficient(w, ScopeRead, "the token carries neither "+ScopeRead+" nor "+ScopeRun)
			return
		}
		ctx := protocol.WithPrincipal(r.Context(), principal)
		ctx = context.WithValue(ctx, scopesKey{}, scopes)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// scopesKey is the context key of the request's scopes.
type scopesKey struct{}

// Allowed is protocol.HTTPConfig.Allowed: a message that changes something (run) needs
// ScopeRun, any other ScopeRead or ScopeRun; without it, 403 insufficient_scope.
func (g *Guard) Allowed(w http.ResponseWriter, r *http.Request, run bool) bool {
	scopes, _ := r.Context().Value(scopesKey{}).([]string)
	if slices.Contains(scopes, ScopeRun) || !run && slices.Contains(scopes, ScopeRead) {
		return true
	}
	need := ScopeRead
	if run {
		need = ScopeRun
	}
	g.insufficient(w, need, "this request needs the scope "+need+", which the token does not carry")
	return false
}

// insufficient answers 403 insufficient_scope, naming the scope needed (RFC 6750 3.1).
func (g *Guard) insufficient(w http.ResponseWriter, scope, why string) {
	w.Header().Set("WWW-Authenticate", g.auth.challenge("error", "insufficient_scope", "scope", scope, "error_description", why))
	writeOAuthError(w, http.StatusForbidden, "insufficient_scope", why)
}

// originAllowed reports whether a browser at origin may call: the server's own origin
// (the one the request was made to, or in oauth mode the audience's) or one of
// AllowOrigins.
func (g *Guard) originAllowed(origin string, r *http.Request) bool {
	norm, err := normalizeOrigin(origin)
	if err != nil {
		return false
	}
	if g.origins[norm] {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if own, err := normalizeOrigin(scheme + "://" + r.Host); err == nil && own == norm {
		return true
	}
	if g.cfg.Mode == ModeOAuth {
		if own, err := normalizeOrigin(g.cfg.Audience); err == nil && own == norm {
			return true
		}
	}
	return false
}

// normalizeOrigin is an origin as compared: scheme://host[:port], lower case, without a
// default port; an error for anything that is not one ("null" included).
func normalizeOrigin(origin string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("not an origin: want scheme://host[:port], such as https://chatgpt.com")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// loopbackHost reports whether a Host header names this machine's loopback: localhost
// (and names under .localhost), or a loopback address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// forwarded reports whether a request says it was passed on by a proxy or a tunnel
// (which reach a loopback server from anywhere): the headers they add.
func forwarded(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip", "Cf-Connecting-Ip", "True-Client-Ip"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// IsLoopback reports whether a listen address (host:port) takes connections from this
// machine only: its host is localhost or a loopback address. An empty host (":7433") or
// an unspecified address listens everywhere.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cors lets a browser at an allowed origin read the answer, and send what MCP needs.
func cors(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "POST, GET, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID")
		if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
			h.Set("Access-Control-Allow-Headers", asked) // Mcp-Param-* headers are the tool's
		}
		h.Set("Access-Control-Max-Age", "600")
	}
}

// forbid answers 403 for a request the server will not take from where it comes.
func forbid(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32600, "message": "Forbidden: " + why}})
}

// writeOAuthError answers status with an OAuth error body (RFC 6750).
func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// challengeOf is a Bearer challenge with params (name, value pairs), quoted.
func challengeOf(params ...string) string {
	if len(params) == 0 {
		return "Bearer"
	}
	parts := make([]string, 0, len(params)/2)
	for i := 0; i+1 < len(params); i += 2 {
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(params[i+1])
		parts = append(parts, params[i]+`="`+v+`"`)
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// bearer is the request's bearer token, "" for none.
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// noAuth is --auth none: every request is the one local principal.
type noAuth struct{}

func (noAuth) authenticate(*http.Request) (string, []string, *refusal) {
	return "local", []string{ScopeRun}, nil
}

func (noAuth) challenge(params ...string) string { return challengeOf(params...) }
