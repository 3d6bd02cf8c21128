// Command agenthost-provider-scripted is the scripted provider adapter. It is
// started by agenthost (go-plugin), not by hand; the fixture comes from the
// manifest's `options = { script = "..." }`.
package main

import (
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/scripted"
)

func main() {
	providers.Serve(scripted.New(nil))
}
