package httpauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
)

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	token, created, err := LoadToken(path)
	if err != nil || !created || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Fatalf("LoadToken(new) = %q, %v, %v; want 64 hex digits, created", token, created, err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", info.Mode().Perm())
	}
	again, created, err := LoadToken(path)
	if err != nil || created || again != token {
		t.Errorf("LoadToken(existing) = %q, %v, %v; want the same token", again, created, err)
	}
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		says          string
	}{
		{"readable by others", strings.Repeat("a", 32), 0o644, "chmod 600"},
		{"writable by the group", strings.Repeat("a", 32), 0o620, "chmod 600"},
		{"too short", "short", 0o600, "at least 16"},
		{"two words", strings.Repeat("a", 20) + " " + strings.Repeat("b", 20), 0o600, "one token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			os.WriteFile(p, []byte(tc.content), tc.mode)
			os.Chmod(p, tc.mode)
			if _, _, err := LoadToken(p); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("LoadToken = %v, want an error saying %q", err, tc.says)
			}
		})
	}
	if _, _, err := LoadToken(dir); err == nil {
		t.Errorf("LoadToken(a directory) = nil error")
	}
}

// tokenGuard is a loopback guard in token mode in front of a handler that says whose
// request it got.
func tokenGuard(t *testing.T, origins ...string) (http.Handler, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	token, _, err := LoadToken(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), Config{Mode: ModeToken, TokenFile: path, Loopback: true, AllowOrigins: origins})
	if err != nil {
		t.Fatal(err)
	}
	return g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Allowed(w, r, r.Header.Get("X-Run") != "") {
			return
		}
		w.Write([]byte("principal=" + protocol.Principal(r.Context())))
	})), token
}

func TestGuard(t *testing.T) {
	h, token := tokenGuard(t, "https://app.example")
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name    string
		method  string
		headers map[string]string
		host    string
		status  int
		www     string // WWW-Authenticate
		body    string // in the answer
	}{
		{name: "the token", headers: map[string]string{"Authorization": bearer}, status: 200, body: "principal=" + TokenPrincipal},
		{name: "the token, bearer in any case", headers: map[string]string{"Authorization": "bearer " + token}, status: 200},
		{name: "no token", status: 401, www: "Bearer"},
		{name: "a wrong token", headers: map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64)}, status: 401, www: `Bearer error="invalid_token"`},
		{name: "the token in a query is not a token", method: "POST", status: 401, www: "Bearer"},
		{name: "localhost", host: "localhost:7433", headers: map[string]string{"Authorization": bearer}, status: 200},
		{name: "::1", host: "[::1]:7433", headers: map[string]string{"Authorization": bearer}, status: 200},
		{name: "a Host that is not loopback", host: "evil.example:7433", headers: map[string]string{"Authorization": bearer}, status: 403, body: "loopback"},
		{name: "a foreign Origin", headers: map[string]string{"Authorization": bearer, "Origin": "https://evil.example"}, status: 403, body: "--allow-origin"},
		{name: "the server's own origin", headers: map[string]string{"Authorization": bearer, "Origin": "http://127.0.0.1:7433"}, status: 200},
		{name: "an allowed origin", headers: map[string]string{"Authorization": bearer, "Origin": "https://app.example"}, status: 200},
		{name: "an allowed origin, default port spelled", headers: map[string]string{"Authorization": bearer, "Origin": "https://APP.example:443"}, status: 200},
		{name: "a preflight from an allowed origin", method: "OPTIONS", headers: map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}, status: 204},
		{name: "a preflight from a foreign origin", method: "OPTIONS", headers: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, status: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "POST"
			}
			url := "http://127.0.0.1:7433/mcp"
			if tc.name == "the token in a query is not a token" {
				url += "?access_token=" + token
			}
			req := httptest.NewRequest(method, url, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, tc.www) || (tc.www == "") != (got == "") {
				t.Errorf("WWW-Authenticate = %q, want %q...", got, tc.www)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body = %s, want it to say %q", rec.Body, tc.body)
			}
			if origin := tc.headers["Origin"]; tc.status < 300 && origin != "" && rec.Header().Get("Access-Control-Allow-Origin") != origin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", rec.Header().Get("Access-Control-Allow-Origin"), origin)
			}
		})
	}
}

// --auth none is for this machine only: not off loopback, and not for a request that a
// proxy or tunnel passed on to a loopback server.
func TestGuard_NoneOnlyOnLoopback(t *testing.T) {
	if _, err := New(context.Background(), Config{Mode: ModeNone, Loopback: false}); err == nil {
		t.Errorf("New(--auth none, not loopback) = nil error")
	}
	g, err := New(context.Background(), Config{Mode: ModeNone, Loopback: true})
	if err != nil {
		t.Fatalf("New(--auth none, loopback) = %v", err)
	}
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(protocol.Principal(r.Context()))) }))
	for header, want := range map[string]int{"": 200, "X-Forwarded-For": 403, "Forwarded": 403, "Cf-Connecting-Ip": 403} {
		req := httptest.NewRequest("POST", "http://127.0.0.1:7433/mcp", nil)
		if header != "" {
			req.Header.Set(header, "203.0.113.9")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("with %q: status %d, want %d", header, rec.Code, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:7433": true, "127.8.9.10:1": true, "[::1]:7433": true, "localhost:7433": true,
		":7433": false, "0.0.0.0:7433": false, "[::]:7433": false, "192.168.1.2:7433": false, "box.example:7433": false, "127.0.0.1": false,
	} {
		if got := IsLoopback(listen); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", listen, got, want)
		}
	}
}

// The guard in oauth mode reads the issuer's metadata where RFC 8414 puts it for an
// issuer with a path, and refuses an issuer whose metadata names another.
func TestOAuth_Discovery(t *testing.T) {
	var issuer string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server/tenant", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
	})
	mux.HandleFunc("/tenant/jwks", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"keys":[]}`)) })
	srv := httptest.NewUnstartedServer(mux)
	issuer = "http://" + srv.Listener.Addr().String() + "/tenant"
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := New(ctx, Config{Mode: ModeOAuth, Issuer: issuer, Audience: "https://me.example/mcp"})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	rec := httptest.NewRecorder()
	g.Handler(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("POST", "http://127.0.0.1/mcp", nil))
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer resource_metadata="https://me.example/.well-known/oauth-protected-resource/mcp"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	if _, err := New(ctx, Config{Mode: ModeOAuth, Issuer: issuer + "/", Audience: "https://me.example/mcp"}); err == nil || !strings.Contains(err.Error(), "names the issuer") {
		t.Errorf("New(an issuer spelled otherwise than its metadata) = %v", err)
	}
}
