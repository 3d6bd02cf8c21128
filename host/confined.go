package host

import (
	"fmt"

	"github.com/agenthost/agenthost/confine"
)

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
	for _, name := range h.Manifest.ProviderNames() {
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
	for _, name := range h.Manifest.ProviderNames() {
		pc := h.Manifest.Providers[name]
		out = append(out, PluginInfo{Name: name, Kind: "provider", Source: pc.Command, Confined: confined(pc.Sandbox)})
	}
	return out
}
