package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/confine"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/spf13/cobra"
)

func newPluginsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "plugins", Short: "List, inspect, call and verify the manifest's Wasm plugins"}
	var listJSON, verifyJSON bool
	list := &cobra.Command{
		Use: "list", Short: "List plugins, MCP servers and providers, with their tools", Args: cobra.NoArgs,
		Example: `  agenthost plugins list
  agenthost -c other/agent.toml plugins list --json | jq -r '.[].name'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withPluginsOnly(cmd, func(h *host.Host) error {
				if listJSON { // the objects the web console lists (host.PluginInfo)
					return printJSON(cmd, h.PluginInfo())
				}
				return printPluginList(cmd, h)
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print a JSON array: name, kind, abi, sandboxed, tools (as the model sees them), permissions")
	verify := &cobra.Command{
		Use: "verify", Short: "Load every plugin (checking sha256 pins and tool input schemas) and report", Args: cobra.NoArgs,
		Long: `Load every plugin of the manifest as a run would: a sha256 pin that does not match, a
module that does not load or a tool plugin that offers no tools stops verify with the
error a run would get. Then compile each tool's input_schema as a run does before its
first call: a plugin with a schema that does not compile is reported (FAIL, or "ok":
false with --json) and verify exits 1.`,
		Example: `  agenthost plugins verify
  agenthost -c deploy/agent.toml plugins verify --json | jq -e 'all(.ok)'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withPluginsOnly(cmd, func(h *host.Host) error {
				report := verifyPlugins(h)
				if verifyJSON {
					if err := printJSON(cmd, report); err != nil {
						return err
					}
				}
				bad := 0
				for _, r := range report {
					if !r.OK {
						bad++
					}
					if verifyJSON {
						continue
					}
					pin := "not pinned"
					if r.Pinned {
						pin = "sha256 ok"
					}
					if r.OK {
						fmt.Fprintf(cmd.OutOrStdout(), "ok  %s (%s, %s, %s)\n", r.Name, r.ABI, plural(r.Tools, "tool"), pin)
					} else {
						fmt.Fprintf(cmd.OutOrStdout(), "FAIL %s (%s, %s, %s): %s\n", r.Name, r.ABI, plural(r.Tools, "tool"), pin, r.Error)
					}
				}
				if bad > 0 {
					return failed(fmt.Errorf("%d of %d plugins failed verification", bad, len(report)))
				}
				return nil
			})
		},
	}
	verify.Flags().BoolVar(&verifyJSON, "json", false, "print a JSON array: name, abi, tools (count), pinned, ok, error")
	cmd.AddCommand(newPluginsPushCmd(), newPluginsPullCmd(), newPluginsBuildCmd(),
		list,
		&cobra.Command{
			Use: "inspect NAME|FILE.wasm", Short: "Show a plugin's tools with their schemas, exports and permissions", Args: cobra.ExactArgs(1),
			Long: `Show a plugin of the manifest, or the .wasm file given by path, as JSON: its kind, ABI,
tools with their input schemas, the names the model sees, its exports and permissions.
A .wasm given by path is loaded with no permission, as "plugins call" loads it (the
manifest is not read).`,
			Example: `  agenthost plugins inspect calc
  agenthost plugins inspect ./build/my_tool.wasm | jq '.tools[].name'`,
			RunE: func(cmd *cobra.Command, args []string) error {
				if isWasmPath(args[0]) {
					h, name, err := openBare(cmd, args[0], "", callFlags{}, nil)
					if err != nil {
						return err
					}
					defer h.Close()
					return inspect(cmd, h, name)
				}
				return withPluginsOnly(cmd, func(h *host.Host) error { return inspect(cmd, h, args[0]) })
			},
		},
		newCallCmd(),
		newNewCmd(),
		verify,
	)
	return cmd
}

// pluginCheck is one plugin in `plugins verify` (and one object of its --json array).
type pluginCheck struct {
	Name   string `json:"name"`
	ABI    string `json:"abi"`
	Tools  int    `json:"tools"`
	Pinned bool   `json:"pinned"` // a sha256 pin, which loading checked
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
}

// verifyPlugins checks what loading does not: each tool's input schema compiles. A run
// compiles them with loop.NewToolSet before its first call, so a broken schema would
// otherwise pass verify and then fail every run; compiling them here with the same
// function gives the same verdict and the same message.
func verifyPlugins(h *host.Host) []pluginCheck {
	out := []pluginCheck{}
	for i, p := range h.Plugins() {
		c := pluginCheck{Name: p.Name(), ABI: string(p.ABI()), Tools: len(p.Tools()), Pinned: h.Manifest.Plugins[i].SHA256 != "", OK: true}
		for _, spec := range p.Tools() {
			t := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: spec.Name, InputSchema: spec.InputSchema}}
			if _, err := loop.NewToolSet(t); err != nil {
				c.OK, c.Error = false, err.Error()
				break
			}
		}
		out = append(out, c)
	}
	return out
}

// inspect prints one plugin or MCP server of h as JSON.
func inspect(cmd *cobra.Command, h *host.Host, name string) error {
	for i, srv := range h.MCPServers() {
		if srv.Name() == name {
			c := h.Manifest.MCPServers[i]
			return printJSON(cmd, map[string]any{"name": srv.Name(), "kind": "mcp_server", "sandboxed": false,
				"note":    "an MCP server runs outside the Wasm sandbox, with the user's rights",
				"command": c.Command, "url": c.URL, "env": c.Env, "tools": srv.Tools(),
				"model_tool_names": h.ModelToolNames()[srv.Name()], "require_approval": c.RequireApproval})
		}
	}
	p, ok := h.Plugin(name)
	if !ok {
		return usage(fmt.Errorf("no plugin %q in %s", name, h.Manifest.Path))
	}
	var cfg manifest.PluginConfig
	for _, c := range h.Manifest.Plugins {
		if c.Name == p.Name() {
			cfg = c
		}
	}
	// Permissions print as manifest keys, sizes and durations as one would write them.
	return printJSON(cmd, map[string]any{"name": p.Name(), "kind": cfg.Kind, "abi": p.ABI(), "wasm": cfg.Wasm,
		"tools": p.Tools(), "model_tool_names": h.ModelToolNames()[p.Name()], "exports": p.Exports(),
		"permissions": cfg.Permissions})
}

// withPluginsOnly opens the manifest's plugins and store without starting a provider,
// not even [memory.embeddings]'s: plugins list, inspect and verify neither store nor
// search memories, and must not need that provider's key.
func withPluginsOnly(cmd *cobra.Command, f func(*host.Host) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Lock: lockMode(cmd), NoProvider: true, NoEmbeddings: true})
	if err != nil {
		return err
	}
	defer h.Close()
	warn(cmd, h)
	return f(h)
}

// withStore opens the manifest's store alone (host.Options.StoreOnly): no plugin is
// compiled, no server or provider started, and no config.load is recorded. For the
// commands that only read or change what the store holds: users, sessions, audit,
// insights, feedback, memory, store rotate-key.
func withStore(cmd *cobra.Command, f func(*host.Host) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	h, err := host.Open(ctx, host.Options{Manifest: manifestPath(cmd), Lock: lockMode(cmd), StoreOnly: true})
	if err != nil {
		return err
	}
	defer h.Close()
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

// processKind is the KIND column of a command the host starts, given its confinement
// (host.PluginInfo's Confined): confined, partly confined (this kernel does not enforce
// all of it: the warnings say what), or NOT SANDBOXED.
func processKind(what string, spec *confine.Spec) string {
	switch {
	case spec == nil:
		return what + " (NOT SANDBOXED)"
	case len(confine.Detect().Missing(*spec)) > 0:
		return what + " (partly confined)"
	}
	return what + " (confined)"
}

// warn prints what the host noticed but does not stop on, such as colliding tool names.
func warn(cmd *cobra.Command, h *host.Host) {
	for _, w := range h.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "agenthost: warning:", w)
	}
}

// plural is "1 tool", "2 tools", "0 tools" ("memory": "memories").
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if s, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, s)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printPluginList is plugins list's table: plugins, MCP servers, A2A agents, built-in
// tools and each agent's hand-off and ask_ tools, then providers, each with the tools the
// model sees from it.
func printPluginList(cmd *cobra.Command, h *host.Host) error {
	if c := h.Confinement(); c != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "agenthost:", c)
	}
	confined := map[string]*confine.Spec{} // by kind and name
	var builtin []host.PluginInfo          // A2A agents, memory, MCP resources, agents' team tools
	for _, info := range h.PluginInfo() {
		confined[info.Kind+" "+info.Name] = info.Confined
		if info.Kind == "a2a_agent" || info.Kind == "builtin" || info.Kind == "agent" {
			builtin = append(builtin, info)
		}
	}
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
	for i, srv := range h.MCPServers() {
		kind := processKind("mcp server", confined["mcp_server "+h.Manifest.MCPServers[i].Name])
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", srv.Name(), kind, map[bool]string{true: "http", false: "stdio"}[srv.Remote()],
			joinOr(modelNames[srv.Name()], "-"))
	}
	for _, b := range builtin {
		abi := map[bool]string{true: "http", false: "-"}[b.Kind == "a2a_agent"]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", b.Name, strings.ReplaceAll(b.Kind, "_", " "), abi, joinOr(b.Tools, "-"))
	}
	for _, name := range h.Manifest.ProviderNames() {
		fmt.Fprintf(w, "%s\t%s\tgrpc\t-\n", name, processKind("provider", confined["provider "+name]))
	}
	return w.Flush()
}
