package server

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// threadSnapshot builds the MESSAGES_SNAPSHOT of a run that continues a thread: the
// stored conversation (entries, oldest first), then the run's new input messages.
//
// AG-UI clients replace their messages by the snapshot, matching by id, so each message
// carries the id the client already knows it by:
//   - an assistant message: RUNID:msg:N, as it was streamed (N counts the run's
//     assistant messages);
//   - a tool result: RUNID:result:CALLID, as TOOL_CALL_RESULT named it; a client tool's
//     result: the id of the client's tool message with that toolCallId;
//   - a user message: the id of the client's user message at the same position among
//     the user messages, when the texts agree, else THREAD:entry:SEQ.
//
// The stored messages carry no ids of their own; this matching is what keeps a
// client's copy and the snapshot one conversation. Reasoning is left out: a client
// keeps the reasoning messages it streamed when the snapshot has none.
func threadSnapshot(threadID string, entries []loop.Entry, ai RunAgentInput, in loop.RunInput) []message {
	var users []inputMessage
	toolIDs := map[string]string{}
	for _, m := range ai.Messages {
		switch m.Role {
		case "user":
			users = append(users, m)
		case "tool":
			toolIDs[m.ToolCallID] = m.ID
		}
	}
	out := []message{}
	nUser := 0
	assistantN := map[string]int{}
	add := func(runID string, seq int64, m loop.Message) {
		switch m.Role {
		case loop.RoleUser:
			id := fmt.Sprintf("%s:entry:%d", threadID, seq)
			if nUser < len(users) && users[nUser].ID != "" {
				if parts, err := contentParts(users[nUser].Content); err == nil && (loop.Message{Content: parts}).Text() == m.Text() {
					id = users[nUser].ID
				}
			}
			nUser++
			out = append(out, message{ID: id, Role: "user", Content: content(m.Content)})
		case loop.RoleAssistant:
			msg := message{ID: fmt.Sprintf("%s:msg:%d", runID, assistantN[runID]), Role: "assistant"}
			assistantN[runID]++
			if text := m.Text(); text != "" {
				msg.Content = text
			}
			for _, c := range m.ToolCalls {
				tc := messageToolCall{ID: c.ID, Type: "function"}
				tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
				msg.ToolCalls = append(msg.ToolCalls, tc)
			}
			out = append(out, msg)
		case loop.RoleTool:
			id := runID + ":result:" + m.ToolCallID
			if cid, ok := toolIDs[m.ToolCallID]; ok && cid != "" {
				id = cid
			}
			out = append(out, message{ID: id, Role: "tool", Content: m.Text(), ToolCallID: m.ToolCallID})
		}
	}
	for _, e := range entries {
		if e.Kind == loop.EntryMessage && e.Message != nil {
			add(e.RunID, e.Seq, *e.Message)
		}
	}
	for i, m := range in.Messages {
		add(in.RunID, -int64(i+1), m)
	}
	return out
}

// content is a message's content as AG-UI has it: a string when it is all text, else
// parts (text, images by url, and attachments as binary parts naming their id).
func content(parts []loop.Part) any {
	text := true
	for _, p := range parts {
		text = text && p.Type == loop.PartText
	}
	if text {
		return partsText(parts)
	}
	out := make([]map[string]any, 0, len(parts))
	for _, p := range parts {
		if p.Type == loop.PartText {
			out = append(out, map[string]any{"type": "text", "text": p.Text})
			continue
		}
		if p.Attachment != "" { // a stored attachment: its reference, never its bytes
			ref := map[string]any{"type": "binary", "id": p.Attachment, "mimeType": p.MimeType, "size": p.Size}
			if p.Name != "" {
				ref["filename"] = p.Name
			}
			out = append(out, ref)
			continue
		}
		out = append(out, map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": p.URL, "mimeType": p.MimeType}})
	}
	return out
}

func partsText(parts []loop.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == loop.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
