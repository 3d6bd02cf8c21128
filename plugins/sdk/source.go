//go:build !wasip1

package sdk

import "embed"

// Source is this package's own source (and its exports subpackages'), embedded in the
// agenthost binary so that `agenthost plugins new go NAME` can write a plugin that
// builds anywhere: the scaffold gets a copy under third_party/agenthost and a go.mod
// replace pointing at it, and needs nothing from the network but go-pdk.
//
//go:embed config.go doc.go hooks.go host.go host_other.go host_wasip1.go schema.go tokens.go tools.go types.go ABI.md exports
var Source embed.FS
