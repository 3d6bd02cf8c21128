package server

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
)

// Hole 8 (server side): a prompt with invalid UTF-8 bytes (and a lone UTF-16 surrogate)
// runs to the end; the stored prompt has U+FFFD in their place.
func TestHole8InvalidUTF8PromptRunCompletes(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	body := `{"threadId":"bad-utf8","runId":"r1","messages":[{"id":"m1","role":"user","content":"what is 2+40? ` +
		"\xff\xfe" + ` \ud800"}]}`
	evs := e.run(t, body)
	b := brief(evs)
	last := b[len(b)-1]
	if last != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("run with invalid UTF-8 ended %q", last)
	}
	entries, err := e.store.Load(context.Background(), "bad-utf8")
	if err != nil {
		t.Fatal(err)
	}
	var prompt string
	for _, en := range entries {
		if en.Message != nil && en.Message.Role == loop.RoleUser {
			prompt = en.Message.Content[0].Text
			break
		}
	}
	if want := "what is 2+40? \uFFFD\uFFFD \uFFFD"; prompt != want {
		t.Fatalf("stored prompt %q, want %q", prompt, want)
	}
}

// Hole 8: input built in Go (not decoded from JSON) is made valid UTF-8 too.
func TestHole8RunInputReplacesInvalidUTF8(t *testing.T) {
	in, err := runInput(RunAgentInput{ThreadID: "s\xff", RunID: "r\xc3", Messages: []inputMessage{
		{ID: "m", Role: "user", Content: json.RawMessage(`[{"type":"text","text":"a"}]`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if in.SessionID != "s\uFFFD" || in.RunID != "r\uFFFD" {
		t.Fatalf("ids %q %q", in.SessionID, in.RunID)
	}
	// A raw message (not re-encoded by json) with a stray byte inside a string.
	parts, err := contentParts(json.RawMessage("\"x\xffy\""))
	if err != nil || len(parts) != 1 || parts[0].Text != "x\uFFFDy" {
		t.Fatalf("contentParts: %v %+v", err, parts)
	}
}

// FuzzRunAgentInput feeds arbitrary bodies through the decoding of POST /v1/runs: the
// JSON decode and runInput. It must never panic; what it accepts must have a session,
// a run, something to run, and valid UTF-8 text.
func FuzzRunAgentInput(f *testing.F) {
	for _, s := range []string{
		runBody("s", "r", "what is 2+40?"),
		resumeBody("s", "r2", "c1", `{"approved":false,"reason":"no"}`),
		resumeBody("s", "r2", "c1", `true`),
		`{"threadId":"s","runId":"r","messages":[{"id":"a","role":"assistant","content":"x"},{"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"url","value":"http://x/y.png","mimeType":"image/png"}}]}]}`,
		`{"threadId":"s","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"data","value":"AAAA","mimeType":"image/png"}}]}]}`,
		`{"threadId":"s","runId":"r","messages":[{"id":"u","role":"user","content":"` + "\xff" + `\ud800"}]}`,
		`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"c","status":"cancelled"}]}`,
		`{"threadId":"s","runId":"r","messages":[{"id":"u","role":"user","content":null}]}`,
		`{"threadId":"s","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio"}]}]}`,
		`[]`, `null`, `{"threadId":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ai RunAgentInput
		if json.Unmarshal(body, &ai) != nil {
			return
		}
		in, err := runInput(ai)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if in.SessionID == "" || in.RunID == "" || (len(in.Messages) == 0 && len(in.Approvals) == 0) {
			t.Fatalf("accepted an input with nothing to run: %+v", in)
		}
		check := func(what, s string) {
			if !utf8.ValidString(s) {
				t.Fatalf("%s is not valid UTF-8: %q", what, s)
			}
		}
		check("session", in.SessionID)
		check("run", in.RunID)
		for _, m := range in.Messages {
			if m.Role != loop.RoleUser || len(m.Content) == 0 {
				t.Fatalf("message %+v", m)
			}
			for _, p := range m.Content {
				check("text", p.Text)
				check("url", p.URL)
			}
		}
		for id, a := range in.Approvals {
			check("interrupt id", id)
			check("reason", a.Reason)
		}
	})
}
