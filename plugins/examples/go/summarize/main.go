//go:build wasip1

// Command summarize is an example context strategy (kind "context", export
// context_build) that compacts: when the history is longer than
// `max_messages` (config, default 30) or the model reported an overflow, it
// asks the host model (create_message; needs the model permission) to
// summarise all but the last `keep` messages (config, default 6) and answers
// a compaction that replaces them with one user message holding the summary.
// Otherwise the input is unchanged.
package main

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/contextbuild"
)

func main() {}

const systemPrompt = "You summarise conversations between a user and an AI agent. Keep facts, decisions, open tasks and tool results that matter; drop chatter. Answer with the summary only."

// SummaryPrefix starts the text of the summary message.
const summaryPrefix = "Summary of the earlier conversation:\n"

func init() {
	sdk.OnContextBuild(func(in sdk.ContextInput) (sdk.ContextOutput, error) {
		maxMessages, err := sdk.ConfigInt("max_messages", 30)
		if err != nil {
			return sdk.ContextOutput{}, err
		}
		keep, err := sdk.ConfigInt("keep", 6)
		if err != nil {
			return sdk.ContextOutput{}, err
		}
		if !in.Overflow && len(in.History) <= maxMessages {
			return sdk.ContextOutput{}, nil
		}
		cut := len(in.History) - keep
		// Never separate tool results from the assistant message that called them.
		for cut > 0 && cut < len(in.History) && in.History[cut].Role == "tool" {
			cut--
		}
		if cut <= 0 {
			return sdk.ContextOutput{}, nil
		}
		summary, err := sdk.Ask(systemPrompt, transcript(in.History[:cut]), 1024)
		if err != nil {
			return sdk.ContextOutput{}, fmt.Errorf("summarise %d messages: %w", cut, err)
		}
		summaryMsg := sdk.TextMessage("user", summaryPrefix+strings.TrimSpace(summary))
		system, _ := sdk.SplitSystem(in.Messages)
		msgs := append(append(append([]sdk.Message{}, system...), summaryMsg), in.History[cut:]...)
		return sdk.ContextOutput{
			Messages: msgs,
			Compact:  &sdk.Compaction{Replace: cut, Summary: []sdk.Message{summaryMsg}},
		}, nil
	})
}

// transcript renders messages as plain text for the summariser.
func transcript(msgs []sdk.Message) string {
	var b strings.Builder
	b.WriteString("Summarise this conversation:\n")
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n[%s] %s", m.Role, m.Text())
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "\n[%s calls %s] %s", m.Role, c.Name, c.Arguments)
		}
	}
	return b.String()
}
