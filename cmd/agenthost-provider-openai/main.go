// Command agenthost-provider-openai is the adapter for OpenAI-compatible
// servers. It is started by agenthost (go-plugin), not by hand; see package
// providers/openai for its options.
package main

import (
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/openai"
)

func main() {
	providers.Serve(openai.New())
}
