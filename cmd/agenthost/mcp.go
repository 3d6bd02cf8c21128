package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcpserver"
	"github.com/agenthost/agenthost/host/server"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Speak the Model Context Protocol"}
	var (
		addr, tokenFile, provider string
		agent                     bool
		allowHosts, allowOrigins  []string
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
need approval are refused: an MCP client cannot answer them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var token string
			if addr != "" { // checked before anything starts
				var err error
				if token, err = listenFlags(addr, tokenFile, allowOrigins); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, err := host.Open(ctx, host.Options{Manifest: manifestPath(cmd), NoProvider: !agent, Provider: provider,
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
			srv, skipped := mcpserver.New(h, versionString())
			if agent {
				mcpserver.AddAgent(srv, h)
			}
			for _, s := range skipped {
				fmt.Fprintln(cmd.ErrOrStderr(), "agenthost: warning: not offered over MCP:", s)
			}
			if addr == "" {
				if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
					return failed(err)
				}
				return nil
			}
			handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
			hs, err := server.New(server.Options{Store: h.Store, Token: token, AllowOrigins: allowOrigins,
				AllowHosts: append(allowHosts, server.AddrHost(addr)...), Routes: map[string]http.Handler{"/mcp": handler}})
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
	f.StringVar(&addr, "http", "", "serve Streamable HTTP on this address (at /mcp) instead of stdio")
	f.StringVar(&tokenFile, "token-file", "", "read the bearer token from this file (default: $AGENTHOST_TOKEN)")
	f.StringArrayVar(&allowHosts, "allow-host", nil, "also accept this name in the Host header (repeatable)")
	f.StringArrayVar(&allowOrigins, "allow-origin", nil, "allow browser requests from this origin (repeatable)")
	cmd.AddCommand(serve)
	return cmd
}
