package protocol

import "context"

// principalKey is the context key of the principal a request comes from.
type principalKey struct{}

// WithPrincipal returns ctx carrying the principal that a transport authenticated: over
// HTTP, the subject of the client's token (internal/httpauth). The tool table reads it back
// with Principal: a terminal session belongs to the principal that opened it.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Principal is the principal ctx carries (WithPrincipal), or "" for none: a stdio
// server's one client, which owns every session of its server.
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
