package host

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/confine"
)

// Commands are confined by default (manifest/sandbox.go): each command entry's
// Sandbox is its whole confinement, nil only when the entry says confine = false.

// confineSpec is the spec a command entry is started with: nil when it has none, or
// when there is no agenthost binary to confine it with (a program embedding the host
// without Options.ConfineExe) and the entry does not require it (then confine.Wrap says
// so and the command does not start).
func (h *Host) confineSpec(spec *confine.Spec) *confine.Spec {
	if spec == nil || (h.opts.ConfineExe == "" && !spec.Required) {
		return nil
	}
	return spec
}

// confined is spec when this host applies it: what plugins list shows.
func (h *Host) confined(spec *confine.Spec) *confine.Spec {
	if s := h.confineSpec(spec); s != nil && confine.Available() > 0 {
		return s
	}
	return nil
}

// confineWarnings says, once per host, of each command what it will run without: all
// confinement (no agenthost binary), or what this kernel does not enforce of it.
func (h *Host) confineWarnings() []string {
	var out []string
	note := func(what string, spec *confine.Spec) {
		switch {
		case spec == nil:
		case h.confineSpec(spec) == nil:
			out = append(out, what+" runs unconfined: no agenthost binary to confine it with")
		default:
			if missing := confine.Detect().Missing(*spec); len(missing) > 0 {
				out = append(out, what+" is confined partly: this kernel does not enforce "+strings.Join(missing, "; "))
			}
		}
	}
	for _, c := range h.Manifest.MCPServers {
		note(fmt.Sprintf("mcp server %q", c.Name), c.Sandbox)
	}
	for _, name := range h.Manifest.ProviderNames() {
		note(fmt.Sprintf("provider %q", name), h.Manifest.Providers[name].Sandbox)
	}
	return out
}

// Confinement says what this kernel enforces of a command's confinement (for the CLI to
// report at start), or "" when the manifest confines no command.
func (h *Host) Confinement() string {
	for _, c := range h.Manifest.MCPServers {
		if h.confineSpec(c.Sandbox) != nil {
			return "confinement: " + confine.Detect().String()
		}
	}
	for _, name := range h.Manifest.ProviderNames() {
		if h.confineSpec(h.Manifest.Providers[name].Sandbox) != nil {
			return "confinement: " + confine.Detect().String()
		}
	}
	return ""
}

// providerInfo lists the manifest's providers, by name, for plugins list: processes
// outside the Wasm sandbox, confined unless their entry says confine = false.
func (h *Host) providerInfo() []PluginInfo {
	var out []PluginInfo
	for _, name := range h.Manifest.ProviderNames() {
		pc := h.Manifest.Providers[name]
		out = append(out, PluginInfo{Name: name, Kind: "provider", Source: pc.Command, Confined: h.confined(pc.Sandbox)})
	}
	return out
}
