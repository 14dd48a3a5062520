package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcp-harness/mcp-harness/internal/httpauth"
	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/server"
)

// newHTTPCmd is `mcp-harness http`: the server for clients that reach it over the
// network (Streamable HTTP), with the flags of stdio and those of where it listens and
// whom it lets in.
func newHTTPCmd(version string) *cobra.Command {
	var (
		flags serveFlags
		h     server.HTTPConfig
	)
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Serve MCP over Streamable HTTP, for clients that cannot start a process (ChatGPT, remote connectors)",
		Long: `Serve MCP over Streamable HTTP at http://<listen>/mcp, for clients that reach the
workspace over the network. Every request needs a bearer token: by default the one in
--token-file (created with a random token when missing; the start line names it), or with
--auth oauth a JWT of --issuer for --audience. A listen address other than loopback needs
--tls-cert and --tls-key.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkHTTPFlags(cmd, h); err != nil {
				return err
			}
			cfg, closeLog, err := flags.config(cmd, version)
			if err != nil {
				return err
			}
			defer closeLog()
			return serveHTTP(cfg, h)
		},
	}
	f := cmd.Flags()
	flags.add(f)
	f.StringVar(&h.Listen, "listen", "127.0.0.1:7433", "the address to listen on, host:port; other than loopback it needs --tls-cert and --tls-key")
	f.StringVar(&h.Auth.Mode, "auth", httpauth.ModeToken, "how clients authenticate: token (the bearer token in --token-file), oauth (JWTs of --issuer for --audience) or none (loopback only)")
	f.StringVar(&h.Auth.TokenFile, "token-file", "", "the bearer token's file, created 0600 with a random token when missing (default <state-dir>/"+server.DefaultTokenFile+")")
	f.StringVar(&h.Auth.Issuer, "issuer", "", "with --auth oauth: the authorization server whose JWTs are accepted (https; its metadata gives its keys)")
	f.StringVar(&h.Auth.Audience, "audience", "", "with --auth oauth: this server's URL as clients reach it, which a token's aud must name (e.g. https://box.example.com/mcp)")
	f.StringArrayVar(&h.Auth.AllowOrigins, "allow-origin", nil, "a browser origin (scheme://host[:port]) that may call besides the server's own (repeatable)")
	f.StringVar(&h.TLSCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	f.StringVar(&h.TLSKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.BoolVar(&h.InsecureHTTP, "insecure-http", false, "serve plain HTTP on an address other than loopback: the token and all output cross the network in clear text; only behind a TLS-terminating proxy")
	f.IntVar(&flags.cfg.MaxWaits, "max-waits", protocol.DefaultMaxWaits, "the most waiting calls (shell_io, shell_open, tasks_status with waitMs...) one principal has in flight; more are answered BUSY")
	return cmd
}

// checkHTTPFlags refuses flags that do not go together, before anything starts.
func checkHTTPFlags(cmd *cobra.Command, h server.HTTPConfig) error {
	if err := checkFlagValues(cmd.Flags(), "max-waits"); err != nil {
		return err
	}
	f := cmd.Flags()
	switch h.Auth.Mode {
	case httpauth.ModeOAuth:
		if h.Auth.Issuer == "" || h.Auth.Audience == "" {
			return usagef("--auth oauth needs --issuer (the authorization server) and --audience (this server's URL)")
		}
		if f.Changed("token-file") {
			return usagef("--token-file is for --auth token")
		}
	case httpauth.ModeToken, httpauth.ModeNone:
		if h.Auth.Issuer != "" || h.Auth.Audience != "" {
			return usagef("--issuer and --audience are for --auth oauth")
		}
		if h.Auth.Mode == httpauth.ModeNone && f.Changed("token-file") {
			return usagef("--token-file is for --auth token")
		}
	default:
		return usagef("--auth %q: want token, oauth or none", h.Auth.Mode)
	}
	if err := server.CheckListen(h); err != nil {
		return usageError{err}
	}
	return nil
}

// serveHTTP serves until SIGTERM, SIGINT or SIGHUP, then shuts down cleanly (exit status
// 0); a second signal during the shutdown exits at once with status 1, as for stdio. Once
// it listens it prints the start line on stderr: the endpoint's URL and how clients
// authenticate (in token mode, the token's file).
func serveHTTP(cfg server.Config, h server.HTTPConfig) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort, stopSignals := shutdownSignals(cfg.Logger, cancel)
	defer stopSignals()
	cfg.Abort = abort
	h.Started = func(url, auth string) { server.StartLine(os.Stderr, url, auth) }
	return server.ServeHTTP(ctx, cfg, h)
}
