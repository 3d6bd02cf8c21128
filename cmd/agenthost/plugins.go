package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host"
	"github.com/spf13/cobra"
)

func newPluginsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "plugins", Short: "List, inspect, call and verify the manifest's Wasm plugins"}
	cmd.AddCommand(
		&cobra.Command{
			Use: "list", Short: "List plugins and their tools", Args: cobra.NoArgs,
			Example: `  agenthost plugins list
  agenthost -c other/agent.toml plugins list`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return withPlugins(cmd, func(h *host.Host) error {
					w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
					fmt.Fprintln(w, "PLUGIN\tKIND\tABI\tTOOLS (as the model sees them)")
					modelNames := h.ModelToolNames()
					for i, p := range h.Plugins() {
						names := modelNames[p.Name()]
						if h.Manifest.Plugins[i].Kind != "tool" {
							names = nil // hooks and strategies offer the model nothing
						}
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name(), h.Manifest.Plugins[i].Kind, p.ABI(), joinOr(names, "-"))
					}
					for _, srv := range h.MCPServers() {
						fmt.Fprintf(w, "%s\tmcp server (NOT SANDBOXED)\t%s\t%s\n", srv.Name(), map[bool]string{true: "http", false: "stdio"}[srv.Remote()],
							joinOr(modelNames[srv.Name()], "-"))
					}
					return w.Flush()
				})
			},
		},
		&cobra.Command{
			Use: "inspect NAME", Short: "Show a plugin's tools with their schemas, exports and permissions", Args: cobra.ExactArgs(1),
			Example: `  agenthost plugins inspect calc
  agenthost plugins inspect calc | jq '.tools[].name'`,
			RunE: func(cmd *cobra.Command, args []string) error {
				return withPlugins(cmd, func(h *host.Host) error {
					for i, srv := range h.MCPServers() {
						if srv.Name() == args[0] {
							c := h.Manifest.MCPServers[i]
							return printJSON(cmd, map[string]any{"name": srv.Name(), "kind": "mcp_server", "sandboxed": false,
								"note":    "an MCP server runs outside the Wasm sandbox, with the user's rights",
								"command": c.Command, "url": c.URL, "env": c.Env, "tools": srv.Tools(),
								"model_tool_names": h.ModelToolNames()[srv.Name()], "require_approval": c.RequireApproval})
						}
					}
					p, ok := h.Plugin(args[0])
					if !ok {
						return usage(fmt.Errorf("no plugin %q in %s", args[0], h.Manifest.Path))
					}
					var cfg host.PluginConfig
					for _, c := range h.Manifest.Plugins {
						if c.Name == p.Name() {
							cfg = c
						}
					}
					// Permissions print as manifest keys, sizes and durations as one would write them.
					out := map[string]any{"name": p.Name(), "kind": cfg.Kind, "abi": p.ABI(), "wasm": cfg.Wasm,
						"tools": p.Tools(), "model_tool_names": h.ModelToolNames()[p.Name()], "exports": p.Exports(),
						"permissions": cfg.Permissions}
					return printJSON(cmd, out)
				})
			},
		},
		newCallCmd(),
		newNewCmd(),
		&cobra.Command{
			Use: "verify", Short: "Load every plugin (checking sha256 pins) and report", Args: cobra.NoArgs,
			Example: `  agenthost plugins verify
  agenthost -c deploy/agent.toml plugins verify && echo every plugin loads`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return withPlugins(cmd, func(h *host.Host) error {
					for i, p := range h.Plugins() {
						pin := "not pinned"
						if h.Manifest.Plugins[i].SHA256 != "" {
							pin = "sha256 ok"
						}
						fmt.Fprintf(cmd.OutOrStdout(), "ok  %s (%s, %d tools, %s)\n", p.Name(), p.ABI(), len(p.Tools()), pin)
					}
					return nil
				})
			},
		},
	)
	return cmd
}

// withPlugins opens the manifest's plugins and store, without starting a provider.
func withPlugins(cmd *cobra.Command, f func(*host.Host) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	h, err := host.Open(ctx, host.Options{Manifest: manifestPath(cmd), NoProvider: true})
	if err != nil {
		return err
	}
	defer h.Close()
	warn(cmd, h)
	return f(h)
}

func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func joinOr(s []string, empty string) string {
	if len(s) == 0 {
		return empty
	}
	out := s[0]
	for _, x := range s[1:] {
		out += ", " + x
	}
	return out
}

// warn prints what the host noticed but does not stop on, such as colliding tool names.
func warn(cmd *cobra.Command, h *host.Host) {
	for _, w := range h.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "agenthost: warning:", w)
	}
}
