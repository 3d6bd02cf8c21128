// Command agenthost-provider-anthropic is the adapter for Anthropic's Messages API. It is
// started by agenthost (go-plugin), not by hand; see package providers/anthropic for its
// options.
package main

import (
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/anthropic"
)

func main() {
	providers.Serve(anthropic.New())
}
