package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/ociplugin"
)

// PluginConfig is one [[plugins]] entry.
type PluginConfig struct {
	Name string `toml:"name"`
	Kind string `toml:"kind"` // tool (default) | context | termination | guardrail | permission | planner | evaluator | memory
	ABI  string `toml:"abi"`  // "" (detect) | mcp | extism | wasi
	Wasm string `toml:"wasm"`
	// JS is a JavaScript or TypeScript tool's entry file, run by the JS runtime plugin
	// (docs/javascript.md): Wasm then names that runtime, or is empty for the one beside
	// agenthost.
	JS          string            `toml:"js"`
	SHA256      string            `toml:"sha256"`
	Args        []string          `toml:"args"`
	PoolSize    int               `toml:"pool_size"`
	Tools       []ToolDecl        `toml:"tools"`
	Cache       *CacheConfig      `toml:"cache"` // the tools whose results may be reused (cache.go)
	Permissions PermissionsConfig `toml:"permissions"`
	// Preinit serves the plugin from a snapshot taken after its _initialize ran once
	// (sandbox.Config.Preinit): faster fresh instances, the Go runtime's random state frozen.
	// Absent: when the module passes every check (else as built); true: required (a module
	// that fails a check is an error); false: never.
	Preinit *bool `toml:"preinit"`
	// Verify is the signature a plugin pulled from a registry must carry (ociplugin).
	Verify *VerifyConfig `toml:"verify"`
	// Prepare calls the plugin's prepare export before each run that offers one of its
	// tools, on the run's session's instance, with the run's init data for it
	// (loop.Runtime; runtime.go).
	Prepare bool `toml:"prepare"`
	// Source is the oci:// reference Wasm, or JS (a built bundle), was pulled from ("" for a file).
	Source string `toml:"-"`
}

// VerifyConfig is a plugin's verify = { key = "cosign.pub" }: its artifact's signature
// must verify with this ECDSA public key (PEM); or, keyless, verify = { identity = "…",
// issuer = "https://…", trusted_root = "trusted_root.json" }: a Sigstore bundle by a
// certificate for this identity (identity_regexp: a regexp the whole identity matches)
// from this OIDC issuer, chaining to the trusted root, logged in its transparency log
// (tlog = false: a timestamp authority's timestamp will do) (docs/oci.md).
type VerifyConfig struct {
	Key            string `toml:"key"`
	Identity       string `toml:"identity"`
	IdentityRegexp string `toml:"identity_regexp"`
	Issuer         string `toml:"issuer"`
	TrustedRoot    string `toml:"trusted_root"`
	Tlog           *bool  `toml:"tlog"`
}

// ToolDecl declares a tool of an extism- or wasi-ABI plugin.
type ToolDecl struct {
	Name        string `toml:"name"`
	Export      string `toml:"export"`
	Description string `toml:"description"`
	Input       string `toml:"input"`
	// InputSchema is a TOML table or a string holding JSON; both decode to JSON here.
	InputSchema Schema `toml:"input_schema"`
	// Args is the argv of this tool's calls (wasi ABI), overriding the plugin's args.
	Args []string `toml:"args"`
	// Cache makes this tool's results reusable (cache.go).
	Cache *CacheConfig `toml:"cache"`
	// Fallback names the tools called in turn when a call of this one fails, with the
	// same arguments or an argument mapping's (fallback.go).
	Fallback FallbackList `toml:"fallback"`
}

// PermissionsConfig is [plugins.permissions]: everything is denied unless granted here.
type PermissionsConfig struct {
	Memory       Size              `toml:"memory" json:"memory,omitempty"`
	Timeout      Duration          `toml:"timeout" json:"timeout,omitempty"`
	MaxInput     Size              `toml:"max_input" json:"max_input,omitempty"`
	MaxOutput    Size              `toml:"max_output" json:"max_output,omitempty"`
	AllowedHosts []string          `toml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	AllowedPaths map[string]string `toml:"allowed_paths" json:"allowed_paths,omitempty"`
	Env          []string          `toml:"env" json:"env,omitempty"`
	Config       ConfigMap         `toml:"config" json:"config,omitempty"`
	Model        bool              `toml:"model" json:"model,omitempty"`
	KV           bool              `toml:"kv" json:"kv,omitempty"`
	// Isolation is which calls may share an instance: pooled | session (default) | call.
	Isolation string `toml:"isolation" json:"isolation,omitempty"`
	// UserSecrets are the config keys whose value is each calling user's own secret
	// (config = { KEY = { secret = "NAME", per_user = true } }), key → secret name
	// (usercreds.go).
	UserSecrets map[string]string `toml:"-" json:"user_secrets,omitempty"`
}

var (
	pluginKinds = []string{"tool", "context", "termination", "guardrail", "permission", "planner", "evaluator", "memory"}
	pluginABIs  = []string{"", "mcp", "extism", "wasi"}
	isolations  = []string{"", "pooled", "session", "call"}
	storeKinds  = []string{"", "memory", "sqlite", "postgres"}
)

// checkPlugin checks the [[plugins]] entry i, resolves its paths and pulls it when it is
// an oci:// reference; names holds the names taken so far.
func (m *Manifest) checkPlugin(i int, names map[string]int) error {
	p := &m.Plugins[i]
	key := fmt.Sprintf("plugins.%d", i)
	if err := m.checkPluginName(i, p, key, names); err != nil {
		return err
	}
	if p.Kind == "" {
		p.Kind = "tool"
	}
	for _, step := range []func(*PluginConfig, string) error{m.checkPluginEnums, m.checkUserSecrets, m.checkPluginWasm, m.checkPluginTools, m.resolvePermissions} {
		if err := step(p, key); err != nil {
			return err
		}
	}
	return nil
}

// checkPluginName refuses a missing, reserved or duplicate name, and records it.
func (m *Manifest) checkPluginName(i int, p *PluginConfig, key string, names map[string]int) error {
	if p.Name == "" {
		return m.ErrorAt(key, "plugin has no name")
	}
	if strings.HasPrefix(p.Name, "agenthost/") {
		// The host keeps its own state in the store's key/value table under such names
		// (workflow runs: agenthost/workflows); a plugin's kv must not reach it.
		return m.ErrorAt(key+".name", "plugin names starting \"agenthost/\" are the host's (%q)", p.Name)
	}
	if j, dup := names[p.Name]; dup {
		return m.ErrorAt(key+".name", "duplicate plugin name %q (also plugins[%d])", p.Name, j)
	}
	names[p.Name] = i
	return nil
}

// checkPluginEnums checks the keys that take one of a few words.
func (m *Manifest) checkPluginEnums(p *PluginConfig, key string) error {
	if !slices.Contains(pluginKinds, p.Kind) {
		return m.ErrorAt(key+".kind", "unknown kind %q (one of %s)", p.Kind, strings.Join(pluginKinds, ", "))
	}
	if !slices.Contains(pluginABIs, p.ABI) {
		return m.ErrorAt(key+".abi", "unknown abi %q (mcp, extism or wasi)", p.ABI)
	}
	if !slices.Contains(isolations, p.Permissions.Isolation) {
		return m.ErrorAt(key+".permissions.isolation", "unknown isolation %q (pooled, session or call)", p.Permissions.Isolation)
	}
	if p.Preinit != nil && *p.Preinit && p.ABI == "wasi" {
		return m.ErrorAt(key+".preinit", "preinit applies to reactor plugins (abi mcp or extism), not to a wasi command")
	}
	return nil
}

// checkPluginWasm finds the module: pulled from a registry, or a file beside the
// manifest; and checks its pin early.
func (m *Manifest) checkPluginWasm(p *PluginConfig, key string) error {
	if p.JS != "" {
		if err := m.checkPluginJS(p, key); err != nil || p.Wasm == "" {
			return err
		}
	}
	if p.Wasm == "" {
		return m.ErrorAt(key, "plugin %q has no wasm file", p.Name)
	}
	if strings.HasPrefix(p.Wasm, ociplugin.Scheme) {
		if err := m.pullPlugin(p, key); err != nil {
			return err
		}
	} else if p.Verify != nil {
		return m.ErrorAt(key+".verify", "verify applies to plugins pulled from a registry (wasm = \"oci://…\")")
	}
	p.Wasm = m.Resolve(p.Wasm)
	if _, err := os.Stat(p.Wasm); err != nil {
		return m.ErrorAt(key+".wasm", "cannot read %s: %v", p.Wasm, errors.Unwrap(err))
	}
	if p.SHA256 != "" {
		// An early error with the manifest's line, read as a provider's pin is (a FIFO is
		// refused, not waited on). It protects nothing by itself: the sandbox checks the
		// pin again on the bytes it compiles (host's sandboxConfig).
		if err := checkDigest(p.Wasm, p.SHA256); err != nil {
			return m.ErrorAt(key+".sha256", "%v", err)
		}
	}
	return nil
}

// jsEntry finds a JavaScript plugin's entry: a built bundle pulled from a registry (its
// cached file), or a file beside the manifest.
func (m *Manifest) jsEntry(p *PluginConfig, key string) error {
	if strings.HasPrefix(p.JS, ociplugin.Scheme) {
		return m.pullJS(p, key)
	}
	if p.Verify != nil {
		return m.ErrorAt(key+".verify", "verify applies to plugins pulled from a registry (js = \"oci://…\")")
	}
	if !slices.Contains(jsExts, strings.ToLower(filepath.Ext(p.JS))) {
		return m.ErrorAt(key+".js", "%q is not a JavaScript or TypeScript file (%s)", p.JS, strings.Join(jsExts, ", "))
	}
	js, err := m.inside(key+".js", p.JS)
	if err != nil {
		return err
	}
	if _, err := os.Stat(js); err != nil {
		return m.ErrorAt(key+".js", "cannot read %s: %v", js, errors.Unwrap(err))
	}
	p.JS = js
	return nil
}

// jsExts are the entry files a JS plugin may name (esbuild's loaders).
var jsExts = []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"}

// checkPluginJS checks a JavaScript plugin: its entry exists, and the keys that make no
// sense for it (it declares its own tools in the mcp ABI) are absent.
func (m *Manifest) checkPluginJS(p *PluginConfig, key string) error {
	if err := m.jsEntry(p, key); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(p.Wasm, ociplugin.Scheme):
		return m.ErrorAt(key+".wasm", "a JavaScript plugin runs in the runtime beside agenthost or a runtime file; not one pulled from a registry")
	case p.ABI != "" && p.ABI != "mcp":
		return m.ErrorAt(key+".abi", "a JavaScript plugin speaks the mcp abi, not %q", p.ABI)
	case len(p.Tools) > 0:
		return m.ErrorAt(key+".tools", "a JavaScript plugin declares its tools in its source (tool({...})), not in [[plugins.tools]]")
	}
	for k := range p.Permissions.Config {
		if strings.HasPrefix(k, "agenthost.js.") {
			return m.ErrorAt(key+".permissions.config", "config keys starting \"agenthost.js.\" are the host's (%q): it gives the bundle in them", k)
		}
	}
	return nil
}

// checkPluginTools checks the declared tools: required for a tool plugin of the extism
// and wasi ABIs, named, and named once.
func (m *Manifest) checkPluginTools(p *PluginConfig, key string) error {
	if (p.ABI == "extism" || p.ABI == "wasi") && len(p.Tools) == 0 && p.Kind == "tool" {
		return m.ErrorAt(key+".abi", "abi %q needs its tools declared in [[plugins.tools]]", p.ABI)
	}
	tools := map[string]bool{}
	for j, t := range p.Tools {
		tk := fmt.Sprintf("%s.tools.%d", key, j)
		if t.Name == "" {
			return m.ErrorAt(tk, "tool has no name")
		}
		if tools[t.Name] {
			return m.ErrorAt(tk+".name", "duplicate tool name %q in plugin %q", t.Name, p.Name)
		}
		tools[t.Name] = true
		if err := m.checkFallback(t.Name, t.Fallback, tk+".fallback"); err != nil {
			return err
		}
	}
	return nil
}

// resolvePermissions makes the allowed paths absolute (each must exist, inside the
// manifest's directory unless allow_outside_paths: paths.go) and expands the config values.
func (m *Manifest) resolvePermissions(p *PluginConfig, key string) error {
	paths := map[string]string{}
	for host, guest := range p.Permissions.AllowedPaths {
		ro := strings.HasPrefix(host, "ro:")
		h, err := m.inside(key+".permissions.allowed_paths", strings.TrimPrefix(host, "ro:"))
		if err != nil {
			return err
		}
		if _, err := os.Stat(h); err != nil {
			return m.ErrorAt(key+".permissions.allowed_paths", "cannot read %s: %v", h, errors.Unwrap(err))
		}
		if ro {
			h = "ro:" + h
		}
		paths[h] = guest
	}
	p.Permissions.AllowedPaths = paths
	for k, v := range p.Permissions.Config { // as in provider options: secrets stay out of the file
		p.Permissions.Config[k] = os.ExpandEnv(v)
	}
	return nil
}
