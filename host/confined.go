package host

import (
	"fmt"

	"github.com/agenthost/agenthost/host/confine"
)

// Commands the host starts, [[mcp_servers]] and [providers.NAME], may carry the same
// sandbox = { read, write, net } (host/confine); this file holds what the two share.

// resolveSandbox makes a sandbox's paths absolute, relative to the manifest.
func (m *Manifest) resolveSandbox(sb *confine.Spec) {
	if sb == nil {
		return
	}
	for j := range sb.Read {
		sb.Read[j] = m.resolve(sb.Read[j])
	}
	for j := range sb.Write {
		sb.Write[j] = m.resolve(sb.Write[j])
	}
}

// confined is spec when the kernel applies it: what plugins list shows.
func confined(spec *confine.Spec) *confine.Spec {
	if spec != nil && confine.Available() > 0 {
		return spec
	}
	return nil
}

// unconfinedProviders warns, once per host, of each provider with a sandbox that this
// kernel cannot apply: it runs all the same (best effort, as MCP servers do).
func (h *Host) unconfinedProviders() []string {
	if confine.Available() > 0 {
		return nil
	}
	var out []string
	for _, name := range h.Manifest.providerNames() {
		if h.Manifest.Providers[name].Sandbox != nil {
			out = append(out, fmt.Sprintf("provider %q runs unconfined: this kernel has no Landlock", name))
		}
	}
	return out
}

// providerInfo lists the manifest's providers, by name, for plugins list: processes
// outside the Wasm sandbox, confined when their entry has a sandbox.
func (h *Host) providerInfo() []PluginInfo {
	var out []PluginInfo
	for _, name := range h.Manifest.providerNames() {
		pc := h.Manifest.Providers[name]
		out = append(out, PluginInfo{Name: name, Kind: "provider", Source: pc.Command, Confined: confined(pc.Sandbox)})
	}
	return out
}

// ProviderNames lists the manifest's [providers.NAME] tables by name.
func (m *Manifest) ProviderNames() []string { return m.providerNames() }
