package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The tool-output cache (seed 000, rule L11): DefaultContext shows tool outputs older
// than the latest tool round cut to MaxToolChars, but nothing is lost: the history keeps
// every output whole (it is stored, L21), the cut output ends with a note naming its
// call, and from the first model call whose input holds such a note the run offers the
// built-in read_tool_output, which reads the rest by that name. It is offered only then,
// so agents whose outputs are never cut see the tool list they declared.

// ReadToolOutput is the name of the built-in tool that reads a cut tool output.
const ReadToolOutput = "read_tool_output"

// readChunk is the most read_tool_output returns at once, in bytes.
const readChunk = 8000

// trimMarker is how a cut output's note begins; hasTrimmed looks for it.
const trimMarker = "more bytes of this output not shown: read_tool_output "

var readToolOutputSpec = ToolSpec{Name: ReadToolOutput,
	Description: "Read more of an earlier tool output that is shown cut, by the id and offset its note gives.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","minLength":1},"offset":{"type":"integer","minimum":0}},"required":["id"],"additionalProperties":false}`)}

// trimNote ends a cut output: how much is missing and, for a tool message (which has a
// call id), how to read it.
func trimNote(callID string, rest, offset int) string {
	if callID == "" {
		return fmt.Sprintf("[… %d more bytes trimmed from an earlier tool output]", rest)
	}
	b, _ := json.Marshal(map[string]any{"id": callID, "offset": offset})
	return fmt.Sprintf("[… %d %s%s]", rest, trimMarker, b)
}

// hasTrimmed reports whether a model input holds a cut tool output with a note.
func hasTrimmed(msgs []Message) bool {
	for i := range msgs {
		if m := &msgs[i]; m.Role == RoleTool && strings.Contains(partsText(m.Content), trimMarker) {
			return true
		}
	}
	return false
}

// offerWithCache is tools with read_tool_output added once the run has shown a cut
// output, unless the agent has a tool of that name (its own wins) or offers no tools.
func (r *run) offerWithCache(tools []ToolSpec) []ToolSpec {
	if !r.outputsTrimmed || len(tools) == 0 {
		return tools
	}
	for _, s := range tools {
		if s.Name == ReadToolOutput {
			return tools
		}
	}
	return append(tools[:len(tools):len(tools)], readToolOutputSpec)
}

// builtinTool resolves a name the agent's tool set does not have: read_tool_output once
// offered, else a team tool (transfer_to_NAME, ask_NAME).
func (r *run) builtinTool(name string) Tool {
	if name == ReadToolOutput && r.outputsTrimmed {
		return FuncTool{ToolSpec: readToolOutputSpec, Fn: r.readToolOutput}
	}
	return r.teamTool(name)
}

// readToolOutput returns up to readChunk bytes of a stored tool output from offset, cut
// on a rune boundary, with a note when more is left. It reads the session's stored
// entries, not the in-memory history: an output a compaction removed from the history is
// still in the store, and the store is not written by the tools running beside it.
func (r *run) readToolOutput(ctx context.Context, c ToolCall) (ToolResult, error) {
	var args struct {
		ID     string `json:"id"`
		Offset int    `json:"offset"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || args.ID == "" || args.Offset < 0 {
		return ErrorResult(`Error: read_tool_output takes {"id": "<call id>", "offset": <bytes, 0 or more>}`), nil
	}
	text, found, err := r.storedToolOutput(ctx, args.ID)
	switch {
	case err != nil:
		return ToolResult{}, fmt.Errorf("read_tool_output: %w", err)
	case !found:
		return ErrorResult(fmt.Sprintf("Error: no tool output with id %q in this session", args.ID)), nil
	case args.Offset >= len(text):
		return ErrorResult(fmt.Sprintf("Error: offset %d is past the end of output %q (%d bytes)", args.Offset, args.ID, len(text))), nil
	}
	return TextResult(chunkAt(text, args.ID, args.Offset)), nil
}

// storedToolOutput is the text of the session's stored tool message for call id.
func (r *run) storedToolOutput(ctx context.Context, id string) (string, bool, error) {
	head, err := LoadHead(ctx, r.cfg.Store, r.in.SessionID)
	if err != nil {
		return "", false, err
	}
	entries := head.Transcript
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Kind == EntryMessage && e.Message.Role == RoleTool && e.Message.ToolCallID == id {
			return e.Message.Text(), true, nil
		}
	}
	return "", false, nil
}

// chunkAt is up to readChunk bytes of text from offset (0 <= offset < len(text)), on
// rune boundaries, with the note for the rest when some is left.
func chunkAt(text, id string, offset int) string {
	start := offset
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	end := min(start+readChunk, len(text))
	for end < len(text) && end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	if end == len(text) {
		return text[start:]
	}
	return text[start:end] + "\n" + trimNote(id, len(text)-end, end)
}
