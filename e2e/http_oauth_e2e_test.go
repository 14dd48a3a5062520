package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testIssuer is an OAuth authorization server of the tests' own, on 127.0.0.1: its
// metadata (RFC 8414) names its JWKS, which publishes the keys it signs tokens with;
// keys can be added and retired (rotation), and it counts the JWKS fetches.
type testIssuer struct {
	srv *httptest.Server
	url string

	mu        sync.Mutex
	keys      map[string]crypto.Signer // by kid
	published []string                 // the kids the JWKS lists
	fetches   int
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{keys: map[string]crypto.Signer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/authorize", "token_endpoint": is.url + "/token"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		is.fetches++
		keys := []any{}
		for _, kid := range is.published {
			keys = append(keys, jwkOf(kid, is.keys[kid].Public()))
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	is.srv = httptest.NewUnstartedServer(mux)
	is.url = "http://" + is.srv.Listener.Addr().String() // before the handlers can read it
	is.srv.Start()
	t.Cleanup(is.srv.Close)
	return is
}

// addKey makes a key (RSA for an "rs" kid, P-256 otherwise) and publishes it if publish.
func (is *testIssuer) addKey(t *testing.T, kid string, publish bool) {
	t.Helper()
	var key crypto.Signer
	var err error
	if strings.HasPrefix(kid, "rs") {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid] = key
	if publish {
		is.published = append(is.published, kid)
	}
}

// publishOnly makes the JWKS list exactly kids.
func (is *testIssuer) publishOnly(kids ...string) {
	is.mu.Lock()
	is.published = kids
	is.mu.Unlock()
}

// sign makes a token with kid's key: RS256 or ES256 by the key's kind. claims get iss
// and exp (in 5 minutes) unless they set them.
func (is *testIssuer) sign(t *testing.T, kid string, claims jwt.MapClaims) string {
	t.Helper()
	if _, ok := claims["iss"]; !ok {
		claims["iss"] = is.url
	}
	if _, ok := claims["exp"]; !ok {
		claims["exp"] = time.Now().Add(5 * time.Minute).Unix()
	}
	for k, v := range claims {
		if v == nil {
			delete(claims, k)
		}
	}
	is.mu.Lock()
	key := is.keys[kid]
	is.mu.Unlock()
	method := jwt.SigningMethod(jwt.SigningMethodES256)
	if _, ok := key.(*rsa.PrivateKey); ok {
		method = jwt.SigningMethodRS256
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (is *testIssuer) jwksFetches() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.fetches
}

// jwkOf is a public key as a JWK.
func jwkOf(kid string, pub crypto.PublicKey) map[string]any {
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, _ := k.Bytes() // 0x04 || X || Y
		return map[string]any{"kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	}
	panic("unknown key type")
}

// audience is the URL the OAuth servers of these tests are known by.
const audience = "https://harness.test/mcp"

// metadataURL is where RFC 9728 puts the audience's metadata.
const metadataURL = "https://harness.test/.well-known/oauth-protected-resource/mcp"

// withToken returns the server as a client with token sees it.
func (s *httpServer) withToken(token string) *httpServer {
	c := *s
	c.token = token
	return &c
}

// callAs is call with token, returning the whole reply.
func (s *httpServer) callAs(token, name string, args map[string]any) reply {
	s.t.Helper()
	return s.withToken(token).post(s.t.Context(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args, "_meta": modernMeta()}},
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", name)
}

// A resource server for real: the tests' issuer signs tokens, and each case is a token a
// client could present. Valid RS256 and ES256 tokens are served; expired, not yet valid,
// for another audience, from another issuer, signed by an unpublished key, with another
// algorithm, without exp or sub are 401 with a challenge naming the RFC 9728 metadata;
// scopes decide what may be called (403 insufficient_scope otherwise).
func TestHTTP_OAuth(t *testing.T) {
	is := newTestIssuer(t)
	is.addKey(t, "rs1", true)
	is.addKey(t, "ec1", true)
	is.addKey(t, "ghost", false) // never published
	s := startHTTP(t, "", "--auth", "oauth", "--issuer", is.url, "--audience", audience)
	run := jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "harness:run"}
	with := func(base jwt.MapClaims, kv ...any) jwt.MapClaims {
		out := jwt.MapClaims{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	hs256 := jwt.NewWithClaims(jwt.SigningMethodHS256, with(run, "iss", is.url, "exp", time.Now().Add(time.Minute).Unix()))
	hs256.Header["kid"] = "rs1"
	is.mu.Lock()
	pubDER, _ := x509.MarshalPKIXPublicKey(is.keys["rs1"].Public())
	is.mu.Unlock()
	confused, _ := hs256.SignedString(pubDER) // the public key as an HMAC secret: alg confusion
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, with(run, "iss", is.url, "exp", time.Now().Add(time.Minute).Unix())).SignedString(jwt.UnsafeAllowNoneSignatureType)

	for _, tc := range []struct {
		name   string
		token  string
		tool   string
		status int
		says   string // in WWW-Authenticate
	}{
		{"valid RS256", is.sign(t, "rs1", with(run)), "tasks_list", 200, ""},
		{"valid ES256", is.sign(t, "ec1", with(run, "sub", "bob")), "tasks_list", 200, ""},
		{"aud as a list with this server in it", is.sign(t, "rs1", with(run, "aud", []string{"https://other.example", audience})), "tasks_list", 200, ""},
		{"scp as a list", is.sign(t, "rs1", with(run, "scope", nil, "scp", []string{"harness:run"})), "shell_list", 200, ""},
		{"no token", "", "tasks_list", 401, `Bearer resource_metadata="` + metadataURL + `"`},
		{"expired", is.sign(t, "rs1", with(run, "exp", time.Now().Add(-5*time.Minute).Unix())), "tasks_list", 401, "expired"},
		{"not valid yet", is.sign(t, "rs1", with(run, "nbf", time.Now().Add(10*time.Minute).Unix())), "tasks_list", 401, "not valid yet"},
		{"another audience", is.sign(t, "rs1", with(run, "aud", "https://other.example/mcp")), "tasks_list", 401, "aud must name"},
		{"no audience", is.sign(t, "rs1", with(run, "aud", nil)), "tasks_list", 401, "no aud"},
		{"another issuer", is.sign(t, "rs1", with(run, "iss", "https://evil.example")), "tasks_list", 401, "not issued by"},
		{"an unpublished key", is.sign(t, "ghost", with(run)), "tasks_list", 401, "invalid_token"},
		{"HS256 keyed with the public key", confused, "tasks_list", 401, "invalid_token"},
		{"alg none", none, "tasks_list", 401, "invalid_token"},
		{"no exp", is.sign(t, "rs1", with(run, "exp", nil)), "tasks_list", 401, "no exp"},
		{"no sub", is.sign(t, "rs1", with(run, "sub", nil)), "tasks_list", 401, "no sub"},
		{"not a JWT", "hello", "tasks_list", 401, "not a JWT"},
		{"harness:read may read", is.sign(t, "rs1", with(run, "scope", "harness:read")), "shell_list", 200, ""},
		{"harness:read may not open a terminal", is.sign(t, "rs1", with(run, "scope", "harness:read")), "shell_open", 403, `error="insufficient_scope", scope="harness:run"`},
		{"harness:read may not cancel", is.sign(t, "rs1", with(run, "scope", "harness:read openid")), "tasks_cancel", 403, `scope="harness:run"`},
		{"no harness scope", is.sign(t, "rs1", with(run, "scope", "openid profile")), "tasks_list", 403, `scope="harness:read"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			switch tc.tool {
			case "shell_open":
				args = map[string]any{"command": "true"}
			case "tasks_cancel":
				args = map[string]any{"graphId": "g-none"}
			}
			r := s.callAs(tc.token, tc.tool, args)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, shortText(string(r.body), 300))
			}
			www := r.header.Get("WWW-Authenticate")
			if tc.status != 200 && (!strings.Contains(www, tc.says) || !strings.Contains(www, `resource_metadata="`+metadataURL+`"`)) {
				t.Errorf("WWW-Authenticate = %q, want it to say %q and name the metadata", www, tc.says)
			}
			if tc.status == 200 {
				checkToolResult(t, tc.tool, r.last()["result"].(map[string]any), defaultMaxResult)
			}
		})
	}

	t.Run("protected resource metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + path)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				ScopesSupported      []string `json:"scopes_supported"`
			}
			json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			if resp.StatusCode != 200 || meta.Resource != audience || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != is.url ||
				strings.Join(meta.ScopesSupported, " ") != "harness:read harness:run" {
				t.Errorf("GET %s = %d %+v", path, resp.StatusCode, meta)
			}
		}
	})
}

// Key rotation: a token signed with a key the issuer published after the server read its
// keys is taken once the server reads them again, which the unknown kid makes it do; a
// token of a key the issuer retired is refused from then on.
func TestHTTP_OAuthKeyRotation(t *testing.T) {
	is := newTestIssuer(t)
	is.addKey(t, "rs1", true)
	s := startHTTP(t, "", "--auth", "oauth", "--issuer", is.url, "--audience", audience)
	claims := func() jwt.MapClaims { return jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "harness:run"} }
	if r := s.callAs(is.sign(t, "rs1", claims()), "tasks_list", map[string]any{}); r.status != 200 {
		t.Fatalf("a token of the first key = %d %s", r.status, r.body)
	}
	before := is.jwksFetches()
	is.addKey(t, "ec2", false)
	is.publishOnly("ec2") // rs1 retired
	if r := s.callAs(is.sign(t, "ec2", claims()), "tasks_list", map[string]any{}); r.status != 200 {
		t.Fatalf("a token of the new key = %d %s, want 200 once the keys are read again", r.status, r.body)
	}
	if is.jwksFetches() == before {
		t.Errorf("the JWKS was not read again for an unknown kid")
	}
	if r := s.callAs(is.sign(t, "rs1", claims()), "tasks_list", map[string]any{}); r.status != 401 {
		t.Errorf("a token of a retired key = %d, want 401", r.status)
	}
}

// One principal cannot read or drive another's terminal session: to bob, alice's session
// is not there (NOT_FOUND, not listed, not closable), and her MCP session's id is 404;
// alice's session is unharmed. The NOT_FOUND names none of alice's sessions.
func TestHTTP_Principals(t *testing.T) {
	is := newTestIssuer(t)
	is.addKey(t, "rs1", true)
	s := startHTTP(t, "", "--auth", "oauth", "--issuer", is.url, "--audience", audience)
	alice := is.sign(t, "rs1", jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "harness:run"})
	bob := is.sign(t, "rs1", jwt.MapClaims{"sub": "bob", "aud": audience, "scope": "harness:run"})

	open := s.callAs(alice, "shell_open", map[string]any{"command": "exec sleep 1000", "timeoutMs": 0})
	id := structuredOf(t, open.last()["result"].(map[string]any))["sessionId"].(string)
	other := s.callAs(alice, "shell_open", map[string]any{"command": "exec sleep 1000", "timeoutMs": 0})
	otherID := structuredOf(t, other.last()["result"].(map[string]any))["sessionId"].(string)

	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"shell_io", map[string]any{"sessionId": id, "input": "echo hi\n", "timeoutMs": 0}},
		{"shell_list", map[string]any{"sessionId": id}},
		{"shell_close", map[string]any{"sessionId": id}},
	} {
		r := s.callAs(bob, tc.tool, tc.args)
		res := r.last()["result"].(map[string]any)
		text := resultText(res)
		if res["isError"] != true || !strings.HasPrefix(text, "NOT_FOUND") {
			t.Errorf("bob's %s on alice's session = %s, want NOT_FOUND", tc.tool, shortText(text, 200))
		}
		if strings.Contains(text, otherID) {
			t.Errorf("bob's %s names alice's other session: %s", tc.tool, text)
		}
	}
	bobs := structuredOf(t, s.callAs(bob, "shell_list", map[string]any{}).last()["result"].(map[string]any))["sessions"].([]any)
	if len(bobs) != 0 {
		t.Errorf("bob lists %v, want none of alice's", bobs)
	}
	alices := structuredOf(t, s.callAs(alice, "shell_list", map[string]any{}).last()["result"].(map[string]any))["sessions"].([]any)
	if len(alices) != 2 {
		t.Errorf("alice lists %d sessions, want her 2 (bob's close must not have closed one)", len(alices))
	}

	// An MCP session (2025 revisions) is its principal's too.
	aliceSession := s.withToken(alice).legacySession(context.Background(), "2025-06-18")
	r := s.withToken(bob).post(t.Context(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		"Mcp-Session-Id", aliceSession, "MCP-Protocol-Version", "2025-06-18")
	if r.status != http.StatusNotFound {
		t.Errorf("bob on alice's Mcp-Session-Id = %d, want 404", r.status)
	}
	r = s.withToken(alice).post(t.Context(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "shell_io", "arguments": map[string]any{"sessionId": id, "timeoutMs": 0}}},
		"Mcp-Session-Id", aliceSession, "MCP-Protocol-Version", "2025-06-18")
	if res, _ := r.last()["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("alice's own session through her MCP session = %s", r.body)
	}
}

// A token that may only read cannot run a tool that changes something by spelling the
// tool's name twice in the body, once as a read-only tool under "name" and once under a
// key that differs only in case ("NAME"), which a JSON decoder into a Go struct takes too
// (and, coming last, wins): the name the call runs under is the one its scope is checked
// against, in both revisions. Nothing is opened.
func TestHTTP_OAuthReadScopeCannotSmuggleARunTool(t *testing.T) {
	is := newTestIssuer(t)
	is.addKey(t, "rs1", true)
	s := startHTTP(t, "", "--auth", "oauth", "--issuer", is.url, "--audience", audience)
	reader := s.withToken(is.sign(t, "rs1", jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "harness:read"}))
	runner := s.withToken(is.sign(t, "rs1", jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "harness:run"}))
	meta, _ := json.Marshal(modernMeta())
	body := func(withMeta bool) string {
		m := ""
		if withMeta {
			m = `,"_meta":` + string(meta)
		}
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell_list","NAME":"shell_open",` +
			`"arguments":{"command":"exec sleep 1000","timeoutMs":0}` + m + `}}`
	}
	check := func(what string, r reply) {
		t.Helper()
		if r.status != http.StatusForbidden || !strings.Contains(r.header.Get("WWW-Authenticate"), `scope="harness:run"`) {
			t.Errorf("%s: a harness:read token smuggling shell_open = %d %s, want 403 insufficient_scope naming harness:run",
				what, r.status, shortText(string(r.body), 300))
		}
	}
	check("2026-07-28", reader.post(t.Context(), body(true),
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "shell_open"))
	// Its Mcp-Name naming the read-only tool does not match the name the call runs under.
	if r := reader.post(t.Context(), body(true), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "shell_list"); r.status != http.StatusBadRequest || r.errorCode() != -32020 {
		t.Errorf("2026-07-28 with Mcp-Name shell_list = %d %s, want 400 HeaderMismatch", r.status, shortText(string(r.body), 300))
	}
	sid := reader.legacySession(t.Context(), "2025-06-18")
	check("2025-06-18", reader.post(t.Context(), body(false), "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-06-18"))

	sessions := structuredOf(t, runner.call("shell_list", map[string]any{}))["sessions"].([]any)
	if len(sessions) != 0 {
		t.Errorf("alice has %d terminal sessions after her read-only token's calls, want none: %v", len(sessions), sessions)
	}
}
