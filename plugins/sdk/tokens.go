package sdk

// EstimateTokens is a cheap, deterministic token estimate for a message:
// one token per 4 bytes of its text, tool call names and arguments and
// reasoning (rounded up), plus 4 for the message's framing. Context
// strategies use it where no tokenizer is available.
func EstimateTokens(m Message) int {
	n := len(m.Reasoning) + len(m.Name)
	for _, p := range m.Content {
		n += len(p.Text) + len(p.URL)
	}
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return (n+3)/4 + 4
}

// EstimateTokensAll sums EstimateTokens over messages.
func EstimateTokensAll(msgs []Message) int {
	total := 0
	for _, m := range msgs {
		total += EstimateTokens(m)
	}
	return total
}

// SplitSystem splits the leading system messages (the system prompt) from
// the rest of a model input.
func SplitSystem(msgs []Message) (system, rest []Message) {
	i := 0
	for i < len(msgs) && msgs[i].Role == "system" {
		i++
	}
	return msgs[:i], msgs[i:]
}

// DropOrphanToolResults drops leading tool messages, whose assistant call
// was cut away: providers refuse a tool result without its call.
func DropOrphanToolResults(msgs []Message) []Message {
	for len(msgs) > 0 && msgs[0].Role == "tool" {
		msgs = msgs[1:]
	}
	return msgs
}
