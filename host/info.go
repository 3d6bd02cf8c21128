package host

import (
	"cmp"
	"sort"

	"github.com/agenthost/agenthost/confine"
	"github.com/agenthost/agenthost/manifest"
)

// PluginInfo describes a loaded plugin, MCP server or provider for a person: what it
// is, the tools the model sees from it, and what it may touch.
type PluginInfo struct {
	Name string `json:"name"`
	// Kind is the plugin kind (tool, context, termination, guardrail, permission) or
	// "mcp_server", "a2a_agent", "builtin" (memory, MCP resources), "agent" (an agent's
	// hand-off and ask_ tools) or "provider".
	Kind string `json:"kind"`
	ABI  string `json:"abi,omitempty"`
	// Sandboxed is false for MCP servers and providers: they run with the user's rights
	// (less what Confined takes away).
	Sandboxed bool     `json:"sandboxed"`
	Tools     []string `json:"tools,omitempty"` // as the model sees them
	// Permissions are the manifest's, except that config values are left out (they are
	// often secrets expanded from the environment): ConfigKeys names them.
	Permissions     *manifest.PermissionsConfig `json:"permissions,omitempty"`
	ConfigKeys      []string                    `json:"config_keys,omitempty"`
	RequireApproval []string                    `json:"require_approval,omitempty"`
	Source          string                      `json:"source,omitempty"` // the .wasm, the MCP server's command or URL, the provider's command
	// Confined is an MCP server's or provider's confinement (confine), unless its
	// entry says confine = false or the kernel has no Landlock.
	Confined *confine.Spec `json:"confined,omitempty"`
	// Preinit is "snapshot" for a Wasm plugin whose instances start from its
	// pre-initialised snapshot (manifest preinit), else why they run _initialize.
	Preinit string `json:"preinit,omitempty"`
}

// PluginInfo lists the loaded plugins, then the MCP servers, in manifest order, then the
// A2A agents and the built-in tools (builtinInfo), then each agent's team tools
// (teamInfo), then the manifest's providers by name
// (started or not: plugins list starts none).
func (h *Host) PluginInfo() []PluginInfo {
	names := h.ModelToolNames()
	out := []PluginInfo{}
	for i, p := range h.Plugins() {
		cfg := h.Manifest.Plugins[i]
		perms := cfg.Permissions
		keys := make([]string, 0, len(perms.Config))
		for k := range perms.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		perms.Config = nil
		kind := cfg.Kind
		if kind == "" {
			kind = "tool"
		}
		info := PluginInfo{Name: p.Name(), Kind: kind, ABI: string(p.ABI()), Sandboxed: true,
			Permissions: &perms, ConfigKeys: keys, Source: cmp.Or(cfg.Source, cfg.JS, cfg.Wasm)}
		if kind == "tool" {
			info.Tools = names[p.Name()]
		}
		info.Preinit = "snapshot"
		if ok, why := p.Preinitialised(); !ok {
			info.Preinit = why
		}
		out = append(out, info)
	}
	for i, srv := range h.MCPServers() {
		c := h.Manifest.MCPServers[i]
		src := c.URL
		if src == "" && len(c.Command) > 0 {
			src = c.Command[0]
		}
		info := PluginInfo{Name: srv.Name(), Kind: "mcp_server", Tools: names[srv.Name()],
			RequireApproval: c.RequireApproval, Source: src}
		info.Confined = h.confined(c.Sandbox)
		out = append(out, info)
	}
	out = append(out, h.builtinInfo(names)...)
	out = append(out, h.teamInfo()...)
	return append(out, h.providerInfo()...)
}

// teamInfo lists, for each agent of the manifest's team that has any, the hand-off
// (transfer_to_NAME) and ask_NAME tools its model is offered beside the tools above,
// kind "agent": from loop.Agent.TeamTools, the specs a run offers, not a list of ours.
func (h *Host) teamInfo() []PluginInfo {
	entry := h.live.agent()
	if entry == nil {
		entry = h.toolAgent.Load()
	}
	if entry == nil || entry.Team() == nil {
		return nil
	}
	var out []PluginInfo
	t := entry.Team()
	for _, name := range t.Names() {
		a, _ := t.Agent(name)
		var tools []string
		for _, s := range a.TeamTools() {
			tools = append(tools, s.Name)
		}
		if len(tools) > 0 {
			out = append(out, PluginInfo{Name: name, Kind: "agent", Tools: tools})
		}
	}
	return out
}

// builtinInfo lists the tools the model sees that no plugin or MCP server offers: the
// [[a2a_agents]] (kind "a2a_agent", a2a_NAME each), the MCP servers' resources
// (mcp_resources, mcp_read_resource) and memory (remember, recall, forget), both kind
// "builtin". Agents' hand-off and ask_ tools are per agent: teamInfo lists them.
func (h *Host) builtinInfo(names map[string][]string) []PluginInfo {
	var out []PluginInfo
	for _, a := range h.Manifest.A2AAgents {
		if tools := names["a2a:"+a.Name]; len(tools) > 0 {
			out = append(out, PluginInfo{Name: a.Name, Kind: "a2a_agent", Tools: tools, Source: a.URL})
		}
	}
	if tools := names[resourceToolsOwner]; len(tools) > 0 {
		out = append(out, PluginInfo{Name: "resources", Kind: "builtin", Tools: tools})
	}
	var mem []string
	for _, t := range h.memoryTools() {
		mem = append(mem, t.Spec().Name)
	}
	if len(mem) > 0 {
		out = append(out, PluginInfo{Name: "memory", Kind: "builtin", Tools: mem})
	}
	return out
}
