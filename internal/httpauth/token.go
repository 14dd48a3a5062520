package httpauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// TokenPrincipal is the one principal of token mode: whoever holds the file's token.
const TokenPrincipal = "token"

// minTokenLen is the shortest token a file may hold: 16 characters are about as many
// bits as a password manager's strong password; LoadToken creates 64 hex digits.
const minTokenLen = 16

// LoadToken returns the token in path, creating the file (0600, 32 random bytes as 64 hex
// digits and a newline) when it does not exist; created says it did. A file that others
// than its owner may read or write is refused, as ssh refuses such a key, and so is one
// whose token is shorter than 16 characters. Whitespace around the token is ignored.
func LoadToken(path string) (token string, created bool, err error) {
	if path == "" {
		return "", false, errors.New("no --token-file given")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		var b [32]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
		token = hex.EncodeToString(b[:])
		_, werr := f.WriteString(token + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return "", false, fmt.Errorf("token file %s: %w", path, werr)
		}
		return token, true, nil
	case !errors.Is(err, fs.ErrExist):
		return "", false, fmt.Errorf("token file: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", false, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", false, fmt.Errorf("token file %s has mode %04o: others than its owner may read or change it; chmod 600 it", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	token = strings.TrimSpace(string(b))
	if len(token) < minTokenLen || strings.ContainsAny(token, " \t\r\n") {
		return "", false, fmt.Errorf("token file %s must hold one token of at least %d characters, without spaces (remove the file and a new one is made)", path, minTokenLen)
	}
	return token, false, nil
}

// tokenAuth is token mode: the bearer token must be the file's.
type tokenAuth struct {
	sum [sha256.Size]byte // of the token: compared in constant time whatever the length
}

func newTokenAuth(path string) (*tokenAuth, error) {
	token, _, err := LoadToken(path)
	if err != nil {
		return nil, err
	}
	return &tokenAuth{sum: sha256.Sum256([]byte(token))}, nil
}

func (a *tokenAuth) authenticate(r *http.Request) (string, []string, *refusal) {
	token := bearer(r)
	if token == "" {
		return "", nil, &refusal{}
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], a.sum[:]) != 1 {
		return "", nil, &refusal{code: "invalid_token", description: "the bearer token is not this server's (it is in the file the server named when it started)"}
	}
	return TokenPrincipal, []string{ScopeRun}, nil
}

// challenge has no resource_metadata: there is no authorization server to name.
func (a *tokenAuth) challenge(params ...string) string { return challengeOf(params...) }
