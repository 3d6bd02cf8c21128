//go:build wasip1

// Command sliding_window is an example context strategy (kind "context",
// export context_build): the model sees the system prompt and the last
// `keep` messages (config, default 20). A window never starts with a tool
// result whose call fell out of it. On overflow the window is halved.
package main

import (
	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/contextbuild"
)

func main() {}

func init() {
	sdk.OnContextBuild(func(in sdk.ContextInput) (sdk.ContextOutput, error) {
		keep, err := sdk.ConfigInt("keep", 20)
		if err != nil {
			return sdk.ContextOutput{}, err
		}
		if in.Overflow {
			keep /= 2
		}
		if keep < 1 {
			keep = 1
		}
		system, rest := sdk.SplitSystem(in.Messages)
		if len(rest) <= keep {
			return sdk.ContextOutput{}, nil // unchanged
		}
		window := sdk.DropOrphanToolResults(rest[len(rest)-keep:])
		return sdk.ContextOutput{Messages: append(append([]sdk.Message{}, system...), window...)}, nil
	})
}
