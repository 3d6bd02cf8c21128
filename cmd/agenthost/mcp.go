package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/serve"
	"github.com/agenthost/agenthost/surface/mcpserver"
	"github.com/agenthost/agenthost/surface/server"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Speak the Model Context Protocol"}
	var (
		addr, tokenFile, provider string
		user                      string
		agent                     bool
		idle                      time.Duration
		maxSessions               int
		allowHosts, allowOrigins  []string
		tlsFiles                  server.TLSFiles
	)
	serve := &cobra.Command{
		Use:   "serve [--http ADDR]",
		Short: "Serve the manifest's sandboxed tools to MCP clients (stdio, or Streamable HTTP at /mcp)",
		Long: `Serve the tools of the manifest's tool plugins to MCP clients (Claude Desktop, Cursor,
any MCP client), each call in the sandbox with its plugin's permissions. Over stdio by
default (stdout carries the protocol only; logs go to stderr); with --http ADDR over
Streamable HTTP at http://ADDR/mcp, with the Host, Origin and token rules of "serve"
(--token-file or AGENTHOST_TOKEN; without a token, loopback only). No provider is started,
unless --agent also offers the whole agent as one tool, ask_<agent> (its tool calls that
need approval are refused: an MCP client cannot answer them; a client that sends a
progressToken is sent the run's tool calls as steps of progress and its model's text as
result pieces while it works). Each declared workflow is
the tool workflow_<name> (its inputs schema as the tool's); workflows with prompt steps
only with --agent. A workflow run left waiting for an approval step is an error naming
its run id, to decide with the workflow run command.

Every call takes the agent's tool policy, as a model's call does: guardrails, permission
plugins, require_approval and approval_default, caps, timeout. A call that needs approval
asks the client's user through MCP elicitation when the client supports it, and is
refused otherwise. Each MCP session is a session of the store (mcp-ID) where its calls
are kept, and plugins with isolation "session" get instances of their own per MCP
session. Over HTTP, sessions idle for --session-idle are dropped and at most
--max-sessions are open at once.

Calls and runs belong to a user, whose long-term memories and preferences they use. Over
HTTP that is the caller: a user's token (agenthost users add) or a JWT from [auth.oidc]
authenticates as that user, as for "serve", and an MCP session stays its opener's. Over
stdio it is --user (default $AGENTHOST_USER): the name an MCP client gives itself is not an
identity. Over HTTP, --user is the user of callers authenticated without a name (the
administrator's token, a loopback server with no token and no users).`,
		Example: `  agenthost -c /path/to/agent.toml mcp serve       # for Claude Desktop's "command"
  agenthost mcp serve --agent --user ana
  agenthost mcp serve --http 127.0.0.1:8765 --agent
  AGENTHOST_TOKEN=secret agenthost mcp serve --http 0.0.0.0:8765 --allow-host tools.example.com
  agenthost --locked mcp serve                     # oci:// plugins only as agent.lock pins them`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loop.CheckUser(user); err != nil {
				return usage(fmt.Errorf("--user: %w", err))
			}
			var token string
			if addr != "" { // checked before anything starts
				var err error
				if token, err = listenFlags(addr, tokenFile, allowOrigins, tlsFiles); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Lock: lockMode(cmd), NoProvider: !agent, Provider: provider,
				Approver: fixedApprover{reason: "no one can approve a tool call of an agent asked over MCP"},
				OnReport: func(r any) {
					if line := report(r, 0, func(_, s string) string { return s }); line != "" {
						fmt.Fprintln(cmd.ErrOrStderr(), line)
					}
				}})
			if err != nil {
				return err
			}
			defer h.Close()
			warn(cmd, h)
			if user, err = h.ResolveUser(ctx, user); err != nil {
				return failed(err)
			}
			srv, skipped := mcpserver.New(h, versionString(), mcpserver.Options{User: user})
			if agent {
				mcpserver.AddAgent(srv, h)
			}
			skipped = append(skipped, mcpserver.AddWorkflows(srv, h, agent)...)
			for _, s := range skipped {
				fmt.Fprintln(cmd.ErrOrStderr(), "agenthost: warning: not offered over MCP:", s)
			}
			if addr == "" {
				if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
					return failed(err)
				}
				return nil
			}
			verify, err := serve.Verifier(ctx, h)
			if err != nil {
				return failed(err)
			}
			handler := mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{IdleTimeout: idle, MaxSessions: maxSessions,
				Caller: func(r *http.Request) string { p, _ := server.PrincipalFrom(r.Context()); return p.ID }})
			hs, err := server.New(server.Options{Store: h.Store, Memory: serve.Memory(h), Token: token, Access: serve.Access(h), Door: h.Door(), Verify: verify, AllowOrigins: allowOrigins,
				AllowHosts: append(allowHosts, server.AddrHost(addr)...), Routes: map[string]http.Handler{"/mcp": handler}, TLS: tlsFiles})
			if err != nil {
				return failed(err)
			}
			logf := func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "agenthost: "+format+"\n", args...) }
			if err := hs.ListenAndServe(ctx, addr, logf); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	f := serve.Flags()
	f.BoolVar(&agent, "agent", false, "also offer the whole agent as the tool ask_<agent> (starts the provider)")
	f.StringVar(&provider, "provider", "", "with --agent: use this [providers.NAME] instead of agent.provider")
	f.StringVar(&user, "user", os.Getenv("AGENTHOST_USER"), "who calls are for over stdio (and over --http, callers without a name): memories are per user (default $AGENTHOST_USER)")
	f.DurationVar(&idle, "session-idle", mcpserver.DefaultIdleTimeout, "with --http: drop an MCP session idle this long (negative: never)")
	f.IntVar(&maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "with --http: MCP sessions open at once; more get 503 (negative: no cap)")
	f.StringVar(&addr, "http", "", "serve Streamable HTTP on this address (at /mcp) instead of stdio")
	f.StringVar(&tokenFile, "token-file", "", "read the bearer token from this file (default: $AGENTHOST_TOKEN)")
	f.StringArrayVar(&allowHosts, "allow-host", nil, "also accept this name in the Host header (repeatable)")
	f.StringArrayVar(&allowOrigins, "allow-origin", nil, "allow browser requests from this origin (repeatable)")
	f.StringVar(&tlsFiles.Cert, "tls-cert", "", "with --http: serve HTTPS with this certificate chain (PEM; with --tls-key)")
	f.StringVar(&tlsFiles.Key, "tls-key", "", "with --http: the private key of --tls-cert (PEM)")
	cmd.AddCommand(serve, newMCPLoginCmd())
	return cmd
}

// newMCPLoginCmd is `agenthost mcp login NAME`: sign in to a remote MCP server's
// authorization server (authorization code with PKCE) and store the token.
func newMCPLoginCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Sign in to a remote MCP server (OAuth authorization code with PKCE) and store its token",
		Long: `Sign in to the authorization server of the [[mcp_servers]] entry NAME (its oauth table
has authorize_url): open the URL printed on stderr in a browser, sign in, and the browser
comes back to a loopback address this command listens on. The token is kept in the
session store (sealed when the store has a key) and refreshed by the hosts that use it.
An entry with auth = "per_user" is reached with each user's own account: --user names
whose token this is.`,
		Example: `  agenthost mcp login github
  agenthost -c team.toml mcp login docs
  agenthost mcp login tracker --user ana`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err := host.MCPLoginAs(ctx, manifestPath(cmd), args[0], user, os.Getenv("AGENTHOST_USER"), func(u string) {
				fmt.Fprintf(cmd.ErrOrStderr(), "Open this URL to sign in:\n%s\n", u)
			})
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "signed in to %s; the token is stored\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "user", "", `whose token, for a server with auth = "per_user" (default $AGENTHOST_USER)`)
	return cmd
}

// signInNote shows the person at the terminal the URL that signs in again to an MCP
// server asking for more scope during a run (host.Options.OnSignIn).
func signInNote(cmd *cobra.Command) func(name string, scopes []string, authURL string) {
	return func(name string, scopes []string, authURL string) {
		fmt.Fprintf(cmd.ErrOrStderr(), "MCP server %s asks for more scope (%s). Open this URL to sign in again:\n%s\n",
			name, strings.Join(scopes, " "), authURL)
	}
}
