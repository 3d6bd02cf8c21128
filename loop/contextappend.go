package loop

import (
	"errors"
	"fmt"
)

// appendFromStrategy adds the messages a context strategy asked to append
// (ContextOutput.Append) to the history, stored like any message of the run (queued and
// written before the model call, L21), and returns msgs with them at its end so this
// call's input has them too. A message that is not a user, system or assistant
// message with content and no tool calls is refused with an error event naming the
// strategy, and the rest still go in. Their text is made valid UTF-8 first (L19).
func (r *run) appendFromStrategy(strategy string, add, msgs []Message) []Message {
	if len(add) == 0 {
		return msgs
	}
	out := msgs[:len(msgs):len(msgs)] // never write into the strategy's or the history's array
	for i, m := range validUTF8(add) {
		if err := checkAppended(m); err != nil {
			r.journal.emit(EventError, &ErrorData{Kind: "context", Message: fmt.Sprintf("context strategy %q: append %d: %v", strategy, i, err)})
			continue
		}
		r.appendMessage(m)
		out = append(out, m)
	}
	return out
}

func checkAppended(m Message) error {
	switch m.Role {
	case RoleUser, RoleSystem, RoleAssistant:
	default:
		return fmt.Errorf("role %q: want user, system or assistant", m.Role)
	}
	if len(m.ToolCalls) > 0 {
		return errors.New("an appended message cannot call tools")
	}
	if len(m.Content) == 0 {
		return errors.New("no content")
	}
	return nil
}
