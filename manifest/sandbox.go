package manifest

import "github.com/agenthost/agenthost/confine"

// Commands the host starts, [[mcp_servers]] and [providers.NAME], may carry the same
// sandbox = { read, write, net } (confine); this file holds what the two share.

// resolveSandbox makes a sandbox's paths absolute, relative to the manifest.
func (m *Manifest) resolveSandbox(sb *confine.Spec) {
	if sb == nil {
		return
	}
	for j := range sb.Read {
		sb.Read[j] = m.Resolve(sb.Read[j])
	}
	for j := range sb.Write {
		sb.Write[j] = m.Resolve(sb.Write[j])
	}
}
