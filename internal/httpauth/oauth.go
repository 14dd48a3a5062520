package httpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// OAuth: the server is a resource server (OAuth 2.1, as the MCP authorization spec has
// it). A token is a JWT that the issuer signed (RS256 or ES256) with a key it publishes
// in its JWKS, found through its metadata (RFC 8414, or OpenID Connect discovery): the
// keys are cached, refreshed every hour and at once (at most every refreshEvery) when a
// token names a key id the cache does not have, which is how a rotated key is picked up.
// The token's iss must be the issuer, its aud name this server (RFC 8707: the audience
// is the server's URL as its clients know it), exp and nbf hold (with a little leeway for
// clocks). Its sub is the principal; its scope (a space-separated string, or scp, a
// list, as some servers write it) must hold harness:read or harness:run.
//
// The server publishes its protected resource metadata (RFC 9728) at
// /.well-known/oauth-protected-resource with the audience's path appended (and without
// it), and every 401 names it, so that a client finds the authorization server from a
// first refused request.

const (
	// discoveryTimeout bounds reading the issuer's metadata and keys.
	discoveryTimeout = 10 * time.Second
	// refreshEvery is the least time between two refreshes of the keys for an unknown
	// key id: a token naming a made-up kid must not make the server hammer the issuer.
	refreshEvery = 10 * time.Second
	// clockLeeway is how far exp and nbf may be off, for clocks that disagree a little.
	clockLeeway = 30 * time.Second
)

// metadataPrefix is where RFC 9728 puts a resource's metadata.
const metadataPrefix = "/.well-known/oauth-protected-resource"

// oauth is oauth mode.
type oauth struct {
	issuer, audience string
	metadataURL      string // of this resource, named in every challenge
	audiencePath     string // the audience URL's path, "" for none
	keys             keyfunc.Keyfunc
	parser           *jwt.Parser
}

func newOAuth(ctx context.Context, cfg Config) (*oauth, error) {
	iss, err := checkURL("--issuer", cfg.Issuer, true)
	if err != nil {
		return nil, err
	}
	aud, err := checkURL("--audience", cfg.Audience, false)
	if err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: discoveryTimeout}
	}
	dctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	jwksURI, err := discover(dctx, client, iss)
	if err != nil {
		return nil, err
	}
	if _, err := checkURL("the issuer's jwks_uri", jwksURI, true); err != nil {
		return nil, err
	}
	noLaterErrors := false
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{jwksURI}, keyfunc.Override{
		Client:                    client,
		HTTPTimeout:               discoveryTimeout,
		NoErrorReturnFirstHTTPReq: &noLaterErrors, // a server that cannot read the keys must not start
		RefreshInterval:           time.Hour,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(refreshEvery), 1),
		RateLimitWaitMax:          5 * time.Second,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				cfg.Logger.Warn("could not refresh the issuer's keys; the ones read before stay in use", "jwks_uri", u, "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("reading the issuer's keys from %s: %w", jwksURI, err)
	}
	path := strings.TrimSuffix(aud.EscapedPath(), "/")
	o := &oauth{
		issuer: cfg.Issuer, audience: cfg.Audience, audiencePath: path, keys: keys,
		metadataURL: aud.Scheme + "://" + aud.Host + metadataPrefix + path,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{"RS256", "ES256"}),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(clockLeeway),
		),
	}
	cfg.Logger.Info("OAuth resource server ready", "issuer", cfg.Issuer, "audience", cfg.Audience, "jwks_uri", jwksURI, "metadata", o.metadataURL)
	return o, nil
}

// checkURL parses a URL flag: absolute, http or https, and when loopbackHTTP only https
// unless its host is a loopback address (tests run their own issuer on 127.0.0.1).
func checkURL(what, raw string, loopbackHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q: want an absolute https URL", what, raw)
	}
	if loopbackHTTP && u.Scheme == "http" && !loopbackHost(u.Host) {
		return nil, fmt.Errorf("%s %q: must be https (plain http only on a loopback address): tokens and keys must not be open to whoever is on the path", what, raw)
	}
	return u, nil
}

// discover reads the issuer's metadata and returns its jwks_uri: RFC 8414's well-known
// URL first, then OpenID Connect's (appended to the issuer, then inserted before its
// path). The metadata's issuer must be the issuer, exactly (RFC 8414 3.3).
func discover(ctx context.Context, client *http.Client, iss *url.URL) (string, error) {
	path := strings.TrimSuffix(iss.EscapedPath(), "/")
	origin := iss.Scheme + "://" + iss.Host
	urls := []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + path + "/.well-known/openid-configuration",
		origin + "/.well-known/openid-configuration" + path,
	}
	var errs []error
	for _, u := range urls {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, client, u, &meta); err != nil {
			errs = append(errs, err)
			continue
		}
		if meta.Issuer != iss.String() {
			return "", fmt.Errorf("the metadata at %s names the issuer %q, not %q: give --issuer exactly as the authorization server names itself", u, meta.Issuer, iss)
		}
		if meta.JWKSURI == "" {
			return "", fmt.Errorf("the metadata at %s has no jwks_uri: this server needs the issuer's signing keys", u)
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("no authorization server metadata for %s: %w", iss, errors.Join(errs...))
}

// getJSON decodes the JSON at u into v.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	return nil
}

func (o *oauth) authenticate(r *http.Request) (string, []string, *refusal) {
	token := bearer(r)
	if token == "" {
		return "", nil, &refusal{}
	}
	claims := jwt.MapClaims{}
	if _, err := o.parser.ParseWithClaims(token, claims, o.keys.KeyfuncCtx(r.Context())); err != nil {
		return "", nil, &refusal{code: "invalid_token", description: o.describe(err, claims)}
	}
	sub, _ := claims.GetSubject()
	if sub == "" {
		return "", nil, &refusal{code: "invalid_token", description: "the token has no sub: this server needs to know whose it is"}
	}
	return sub, scopesOf(claims), nil
}

// describe says why a token with claims was refused, in words a person can act on.
func (o *oauth) describe(err error, claims jwt.MapClaims) string {
	if errors.Is(err, jwt.ErrTokenRequiredClaimMissing) {
		for _, c := range []struct{ name, why string }{
			{"exp", "the token has no exp: this server takes only tokens that expire"},
			{"aud", "the token has no aud: it must name " + o.audience},
			{"iss", "the token has no iss: it must be " + o.issuer},
		} {
			if _, ok := claims[c.name]; !ok {
				return c.why
			}
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is not a JWT"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired: get a new one"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is not valid yet (nbf or iat in the future)"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the token is not for this server: its aud must name " + o.audience
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token was not issued by " + o.issuer
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the token's signature does not verify with the issuer's key"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token's signature cannot be checked: it is not signed with RS256 or ES256 by a key the issuer publishes"
	}
	return "the token is not valid: " + err.Error()
}

// scopesOf reads a token's scopes: scope (RFC 8693 and 9068: space-separated) or scp
// (a list, or a string).
func scopesOf(claims jwt.MapClaims) []string {
	var out []string
	for _, name := range []string{"scope", "scp"} {
		switch v := claims[name].(type) {
		case string:
			out = append(out, strings.Fields(v)...)
		case []any:
			for _, s := range v {
				if str, ok := s.(string); ok {
					out = append(out, str)
				}
			}
		}
	}
	return out
}

// challenge names the resource metadata (RFC 9728 5.1).
func (o *oauth) challenge(params ...string) string {
	return challengeOf(append(params, "resource_metadata", o.metadataURL)...)
}

// metadataPaths are where the metadata is served: under the audience's path, as RFC
// 9728 puts it, and at the root, where clients look when that fails.
func (o *oauth) metadataPaths() []string {
	if o.audiencePath == "" {
		return []string{metadataPrefix}
	}
	return []string{metadataPrefix + o.audiencePath, metadataPrefix}
}

// serveMetadata serves the protected resource metadata (RFC 9728).
func (o *oauth) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET the metadata", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=3600")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"resource":                 o.audience,
		"authorization_servers":    []string{o.issuer},
		"scopes_supported":         []string{ScopeRead, ScopeRun},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "mcp-harness",
	})
}
