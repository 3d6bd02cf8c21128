package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/spf13/cobra"
)

// callFlags are the permissions of `plugins call` on a bare .wasm, as extism call has
// them; a plugin of the manifest has the manifest's.
type callFlags struct {
	allowPaths, allowHosts, env, config []string
	timeout, memory, abi                string
	kv                                  bool
	logLevel, user                      string
}

func newCallCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call PLUGIN|FILE.wasm|FILE.ts TOOL [ARGS_JSON|-]",
		Short: "Call one tool without a model; prints the CallToolResult (exit 1 when isError)",
		Long: `Call one tool of a plugin of the manifest, or of a .wasm file given by path, and print
its CallToolResult. The arguments are checked against the tool's input schema exactly as
a run checks them; they default to {} and "-" reads them from stdin. The call takes the
agent's whole tool pipeline, as a model's would: guardrails, permission plugins, the
approval policy (asked on the terminal; refused when stdin is not one) and the caps; it
is stored as a session of its own and recorded in the audit log. What the plugin logs
or writes to stdout and stderr is printed to stderr, and so is each piece of its result
a tool streams (stream_result), as it comes and as it is; stdout is the whole result
alone. --log-level off prints none of it.

A JavaScript or TypeScript source given by path (.js, .ts, …) runs in the JS runtime
plugin, as a [[plugins]] js entry does. A .wasm or source given by
path gets no permission but those of the flags (the manifest is not
read): --allow-path HOST[:GUEST] (prefix ro: for read-only), --allow-host, --env NAME,
--set KEY=VALUE, --timeout, --memory, --kv. An extism- or wasi-ABI module's tool is
its export (or its command) named TOOL.

Exit status: 0 a result, 1 an isError result, 2 refused arguments or a usage error.`,
		Example: `  agenthost plugins call calc calc '{"expression":"6*7"}'
  echo '{"expression":"6*7"}' | agenthost plugins call calc calc -
  agenthost plugins call ./fetch.wasm fetch '{"url":"https://example.com"}' --allow-host example.com --timeout 10s
  agenthost plugins call ./greet.wasm greet --abi extism --set greeting=hi --allow-path ro:./data:/data`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			minLevel, err := parseLogLevel(f.logLevel)
			if err != nil {
				return usage(err)
			}
			in := []byte("{}")
			if len(args) == 3 {
				in = []byte(args[2])
				if args[2] == "-" {
					if in, err = io.ReadAll(cmd.InOrStdin()); err != nil {
						return failed(fmt.Errorf("read arguments from stdin: %w", err))
					}
					in = bytes.TrimSpace(in)
				}
			}
			out := &callStderr{w: cmd.ErrOrStderr(), pieces: minLevel < len(loop.LogLevels)}
			onReport := func(r any) {
				if line := report(r, minLevel, func(_, s string) string { return s }); line != "" {
					out.line(line)
				}
			}
			target, tool := args[0], args[1]
			var h *host.Host
			if isWasmPath(target) {
				if h, target, err = openBare(cmd, target, tool, f, onReport); err != nil {
					return err
				}
			} else if cmd.Flags().NFlag() > boolInt(cmd.Flags().Changed("log-level"))+boolInt(cmd.Flags().Changed("user"))+boolInt(cmd.Flags().Changed("config"))+boolInt(cmd.Flags().Changed("locked")) {
				return usage(errors.New("permission flags apply to a .wasm given by path; a manifest plugin has the manifest's permissions"))
			} else if h, err = host.Open(cmd.Context(), host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Lock: lockMode(cmd), NoProvider: true, OnReport: onReport}); err != nil {
				return err
			}
			defer h.Close()
			if err := hasTool(h, target, tool); err != nil {
				return usage(err)
			}
			// The call takes the host's door: the agent's whole tool pipeline (guardrails,
			// permission plugins, approvals, caps), audited and traced, for the local user.
			// A call that needs approval is asked on the terminal, or refused without one.
			opts := host.CallOptions{OnEvent: func(e loop.Event) {
				if d, ok := e.Data.(*loop.ToolResultDeltaData); ok {
					out.piece(d.Text)
					return
				}
				onReport(e.Data)
			}}
			if len(args) < 3 || args[2] != "-" {
				if isTerminal(cmd.InOrStdin()) {
					opts.Approver = &askApprover{in: bufio.NewReader(cmd.InOrStdin()), out: cmd.ErrOrStderr()}
				}
			}
			res, _, err := h.Door().CallPluginTool(cmd.Context(), h.Local(cmd.Context(), f.user), target, tool, in, opts)
			out.line("") // ends a piece's line, if one is open: the result starts on its own
			var invalid *host.InvalidArgumentsError
			if errors.As(err, &invalid) {
				return usage(err)
			}
			if err != nil {
				return failed(err)
			}
			if err := printJSON(cmd, res); err != nil {
				return err
			}
			if res.IsError {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.allowPaths, "allow-path", nil, "mount HOST[:GUEST] (ro:HOST… for read-only); .wasm by path only")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "let the plugin reach this host (glob); .wasm by path only")
	fl.StringArrayVar(&f.env, "env", nil, "pass this environment variable through; .wasm by path only")
	fl.StringArrayVar(&f.config, "set", nil, "config KEY=VALUE the plugin reads with config_get; .wasm by path only")
	fl.StringVar(&f.timeout, "timeout", "", "call timeout, e.g. 5s; .wasm by path only")
	fl.StringVar(&f.memory, "memory", "", "memory ceiling, e.g. 64MiB; .wasm by path only")
	fl.StringVar(&f.abi, "abi", "", "mcp, extism or wasi (default: detected); .wasm by path only")
	fl.BoolVar(&f.kv, "kv", false, "let the plugin use the key/value store (in memory); .wasm by path only")
	fl.StringVar(&f.logLevel, "log-level", "debug", "show plugin output at this level and above, or off")
	fl.StringVar(&f.user, "user", "", "who the call is for: the audit log's actor and the owner of the call's session")
	return cmd
}

// callStderr is what `plugins call` prints to stderr: the plugin's log lines and
// progress, one a line, and the pieces of the result a tool streams, as they come and as
// they are (a piece may end mid-line; a log line after one starts on a line of its own).
// The pieces come from the call's events and the lines from the host's reports too, so
// one lock orders them.
type callStderr struct {
	mu     sync.Mutex
	w      io.Writer
	pieces bool // print the pieces (not under --log-level off)
	mid    bool // the last piece did not end its line
}

func (c *callStderr) piece(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pieces || text == "" {
		return
	}
	_, _ = io.WriteString(c.w, text)
	c.mid = !strings.HasSuffix(text, "\n")
}

// line prints s on a line of its own; "" only ends an open piece's line.
func (c *callStderr) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mid {
		_, _ = io.WriteString(c.w, "\n")
		c.mid = false
	}
	if s != "" {
		fmt.Fprintln(c.w, s)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// openBare opens a host whose one plugin is the .wasm at path, with f's permissions, and
// returns it with the plugin's name. tool is the tool to be called ("" for none): an
// extism or wasi module names no tools itself, so it is declared as the export of that
// name. Compiled modules are cached where the manifest's are (bareCacheDir).
func openBare(cmd *cobra.Command, path, tool string, f callFlags, onReport func(any)) (*host.Host, string, error) {
	loaded, err := bareManifest(path, tool, f, false)
	if err != nil {
		return nil, "", usage(err)
	}
	opts := host.Options{OnCompile: compileNote(cmd), Loaded: loaded, NoProvider: true, OnReport: onReport, CacheDir: bareCacheDir(cmd)}
	h, err := host.Open(cmd.Context(), opts)
	if err != nil && tool != "" && errors.Is(err, host.ErrNoTools) {
		// If declaring TOOL fails too, the first error (with its hints) is the useful one.
		first := err
		if opts.Loaded, err = bareManifest(path, tool, f, true); err != nil {
			return nil, "", usage(err)
		}
		if h, err = host.Open(cmd.Context(), opts); err != nil {
			err = first
		}
	}
	var me *manifest.Error
	if errors.As(err, &me) {
		return nil, "", usage(fmt.Errorf("%s: %s", path, me.Msg)) // the manifest is ours, not the user's
	}
	if err != nil {
		return nil, "", err
	}
	return h, loaded.Plugins[0].Name, nil
}

// bareCacheDir is where a .wasm called by path is compiled into: the cache of the
// manifest (-c, agent.toml) when there is one, .agenthost/cache beside it, so the module
// a project tries by path and then adds to its manifest is compiled once, not once per
// cache (14 s for a Go plugin); with no manifest, the user's (userCacheDir), since a cache
// in the current directory would be litter (14 MB for the calc example).
// $AGENTHOST_CACHE_DIR, when set, is every command's cache (host.CacheDirFromEnv).
func bareCacheDir(cmd *cobra.Command) string {
	if d := host.CacheDirFromEnv(); d != "" {
		return d
	}
	if p := manifestPath(cmd); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			if abs, err := filepath.Abs(p); err == nil {
				return filepath.Join(filepath.Dir(abs), ".agenthost", "cache")
			}
		}
	}
	return userCacheDir()
}

// userCacheDir is where modules given by path are cached: $XDG_CACHE_HOME/agenthost
// (~/.cache/agenthost; ~/Library/Caches/agenthost on macOS), or a directory under the
// system's temporary one when there is no home.
func userCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "agenthost")
	}
	return filepath.Join(os.TempDir(), "agenthost-cache")
}

// hasTool says what is wrong when TARGET TOOL names no tool: a typo on the command line
// is a usage error (exit 2), not a failed call, and the message lists what there is.
func hasTool(h *host.Host, target, tool string) error {
	if p, ok := h.Plugin(target); ok {
		var names []string
		for _, s := range p.Tools() {
			if s.Name == tool {
				return nil
			}
			names = append(names, s.Name)
		}
		return fmt.Errorf("plugin %q has no tool %q (its tools: %s)", target, tool, joinOr(names, "none"))
	}
	for _, srv := range h.MCPServers() {
		if srv.Name() != target {
			continue
		}
		var names []string
		for _, t := range h.ToolList() {
			if t.Plugin == target {
				if t.Tool == tool {
					return nil
				}
				names = append(names, t.Tool)
			}
		}
		return fmt.Errorf("mcp server %q has no tool %q (its tools: %s)", target, tool, joinOr(names, "none"))
	}
	var names []string
	for _, p := range h.Plugins() {
		names = append(names, p.Name())
	}
	for _, srv := range h.MCPServers() {
		names = append(names, srv.Name())
	}
	return fmt.Errorf("no plugin %q in %s (plugins: %s)", target, h.Manifest.Path, joinOr(names, "none"))
}

// isWasmPath tells a .wasm (or a JavaScript or TypeScript source) given by path from a
// plugin name of the manifest.
func isWasmPath(s string) bool {
	return strings.HasSuffix(s, ".wasm") || isJSPath(s) || strings.ContainsRune(s, filepath.Separator)
}

// isJSPath is a JavaScript or TypeScript source: a [[plugins]] js entry, not a module.
func isJSPath(s string) bool {
	switch strings.ToLower(filepath.Ext(s)) {
	case ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx":
		return true
	}
	return false
}

// bareManifest is the manifest of `plugins call FILE.wasm`: the one plugin with the
// flags' permissions and a memory store, checked as a manifest file is. declare names
// TOOL as the plugin's one tool (extism and wasi modules do not describe their tools).
func bareManifest(wasm, tool string, f callFlags, declare bool) (*manifest.Manifest, error) {
	if _, err := os.Stat(wasm); err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(wasm), filepath.Ext(wasm))
	perms := map[string]any{}
	if f.timeout != "" {
		if _, err := time.ParseDuration(f.timeout); err != nil {
			return nil, fmt.Errorf("--timeout: %w", err)
		}
		perms["timeout"] = f.timeout
	}
	if f.memory != "" {
		if _, err := manifest.ParseSize(f.memory); err != nil {
			return nil, fmt.Errorf("--memory: %w", err)
		}
		perms["memory"] = f.memory
	}
	if err := accessPermissions(f, perms); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(wasm)
	if err != nil {
		return nil, err
	}
	key := "wasm"
	if isJSPath(wasm) {
		key = "js" // run by the JS runtime plugin, which describes the tools the source declares
		declare = false
	}
	p := map[string]any{"name": name, key: abs, "permissions": perms}
	if f.abi != "" {
		p["abi"] = f.abi
	}
	if declare || f.abi == "extism" || f.abi == "wasi" {
		p["tools"] = []map[string]string{{"name": tool}}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{
		// The paths come from the command line, not a project: allow_outside_paths.
		"allow_outside_paths": true, "store": map[string]string{"kind": "memory"}, "plugins": []any{p}}); err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return manifest.Parse(filepath.Join(cwd, "(plugins call)"), buf.Bytes())
}

// accessPermissions adds to perms what the flags grant beyond time and memory: hosts,
// environment variables, a key-value store, paths (ro:HOST[:GUEST] read-only) and
// configuration values (KEY=VALUE).
func accessPermissions(f callFlags, perms map[string]any) error {
	if len(f.allowHosts) > 0 {
		perms["allowed_hosts"] = f.allowHosts
	}
	if len(f.env) > 0 {
		perms["env"] = f.env
	}
	if f.kv {
		perms["kv"] = true
	}
	if len(f.allowPaths) > 0 {
		paths := map[string]string{}
		for _, p := range f.allowPaths {
			hostPath, guest, ok := strings.Cut(strings.TrimPrefix(p, "ro:"), ":")
			if !ok {
				guest = hostPath
			}
			if strings.HasPrefix(p, "ro:") {
				hostPath = "ro:" + hostPath
			}
			paths[hostPath] = guest
		}
		perms["allowed_paths"] = paths
	}
	if len(f.config) > 0 {
		cfg := map[string]string{}
		for _, kv := range f.config {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("--set %q: want KEY=VALUE", kv)
			}
			cfg[k] = v
		}
		perms["config"] = cfg
	}
	return nil
}
