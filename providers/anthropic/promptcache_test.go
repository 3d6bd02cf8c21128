package anthropic_test

import (
	"io"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

func text(role, s string) *providers.Message {
	return &providers.Message{Role: role, Content: []*providers.Part{{Type: providers.PartText, Text: s}}}
}

// The request's prompt_cache marks the stable prefix as cache breakpoints: the system
// prompt, the last tool and the older turns (the end of the message before the newest),
// even with the adapter's own cache option off; without it, that option alone decides,
// and nothing of the conversation is marked. The cached input tokens the API reports
// come back in the usage event (read and written apart, both within the prompt's).
func TestPromptCacheMarksSystemToolsAndOlderTurns(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r, map[string]string{"cache": "off"})
	msgs := []*providers.Message{text(providers.RoleSystem, "You compute."), text(providers.RoleUser, "hi"),
		text(providers.RoleAssistant, "hello"), text(providers.RoleUser, "again")}
	tools := []*providers.Tool{{Name: "calc", Description: "Evaluate arithmetic.", InputSchema: `{"type":"object"}`}}
	for _, tc := range []struct {
		pc   *providers.PromptCache
		want string
	}{
		{&providers.PromptCache{Enabled: true, Key: "agenthost-k"}, `{
 "max_tokens": 4096,
 "messages": [
  {"role": "user", "content": [{"type": "text", "text": "hi"}]},
  {"role": "assistant", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]},
  {"role": "user", "content": [{"type": "text", "text": "again"}]}],
 "model": "claude-sonnet-4-5",
 "stream": true,
 "system": [{"type": "text", "text": "You compute.", "cache_control": {"type": "ephemeral"}}],
 "tools": [{"name": "calc", "description": "Evaluate arithmetic.", "cache_control": {"type": "ephemeral"}, "input_schema": {"type": "object"}}]
}`},
		{nil, `{
 "max_tokens": 4096,
 "messages": [
  {"role": "user", "content": [{"type": "text", "text": "hi"}]},
  {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
  {"role": "user", "content": [{"type": "text", "text": "again"}]}],
 "model": "claude-sonnet-4-5",
 "stream": true,
 "system": [{"type": "text", "text": "You compute."}],
 "tools": [{"name": "calc", "description": "Evaluate arithmetic.", "input_schema": {"type": "object"}}]
}`},
	} {
		r.Use("text.http")
		evs, err := run(t, c, &providers.ChatRequest{Messages: msgs, Tools: tools, PromptCache: tc.pc})
		if err != io.EOF {
			t.Fatal(err)
		}
		if g, w := canonical(t, r.Last().Body), canonical(t, []byte(tc.want)); g != w {
			t.Fatalf("prompt_cache %v: request body:\n%s\nwant:\n%s", tc.pc, g, w)
		}
		if !slices.Contains(evs, "3 usage prompt=3560 completion=6 total=3566 cache_read=2048 cache_write=1500") {
			t.Fatalf("events %q", evs)
		}
	}
}
