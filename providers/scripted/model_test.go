package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/scripted"
)

func play(t *testing.T, m *scripted.Model, req *providers.ChatRequest) ([]string, error) {
	t.Helper()
	var got []string
	var seq int64
	err := m.Stream(context.Background(), req, func(ev *providers.ChatEvent) error {
		seq++
		ev.Seq = seq
		got = append(got, providers.FormatEvent(ev))
		return nil
	})
	return got, err
}

func parse(t *testing.T, s string) *scripted.Model {
	t.Helper()
	f, err := scripted.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(f)
}

func user(text string) *providers.Message {
	return &providers.Message{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: text}}}
}

func TestUnknownKeyNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.json")
	os.WriteFile(path, []byte(`{"turns":[{"text":"hi","stop_reasn":"end_turn"}]}`), 0o644)
	_, err := scripted.Load(path)
	want := `scripted: fixture ` + path + `: json: unknown field "stop_reasn"`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestValidation(t *testing.T) {
	for fixture, want := range map[string]string{
		`{"turns":[{"error":{"kind":"teapot"}}]}`:          `turn 1: error.kind "teapot" is not one of`,
		`{"turns":[{},{"tool_calls":[{"name":"calc"}]}]}`:  `turn 2: tool_calls[0]: id and name are required`,
		`{"turns":[{"text":"x","error":{"kind":"auth"}}]}`: `turn 1: a turn with error has no text`,
		`{"turns":[]} {}`: `trailing data`,
		`{"turns":[{"expect":{"last_role":"user","tool_offered":1}}]}`: `unknown field "tool_offered"`,
	} {
		_, err := scripted.Parse([]byte(fixture))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", fixture, err, want)
		}
	}
}

func TestExpect(t *testing.T) {
	m := parse(t, `{"turns":[
		{"expect":{"last_role":"tool"}},
		{"expect":{"tools_offered":true}},
		{"expect":{"tools_offered":false}},
		{"expect":{"contains":"17*23"}},
		{"expect":{"messages":3}},
		{"expect":{"last_role":"user","tools_offered":false,"contains":"17*23","messages":1},"text":"ok"}]}`)
	req := &providers.ChatRequest{Messages: []*providers.Message{user("what is 17*23?"), {Role: providers.RoleAssistant}}}
	tools := &providers.ChatRequest{Messages: []*providers.Message{user("hi")}, Tools: []*providers.Tool{{Name: "calc"}}}
	for i, c := range []struct {
		req  *providers.ChatRequest
		want string
	}{
		{req, `provider: scripted: turn 1: expect.last_role "tool", but the last message is "assistant"`},
		{req, `provider: scripted: turn 2: expect.tools_offered true, but the request offers no tools`},
		{tools, `provider: scripted: turn 3: expect.tools_offered false, but the request offers 1 tools`},
		{tools, `provider: scripted: turn 4: expect.contains "17*23" not found in the last user message`},
		{req, `provider: scripted: turn 5: expect.messages 3, but the request carries 2`},
	} {
		if _, err := play(t, m, c.req); err == nil || err.Error() != c.want {
			t.Errorf("call %d: err = %v\nwant %s", i+1, err, c.want)
		}
	}
	req.Messages = req.Messages[:1]
	if got, err := play(t, m, req); err != nil || strings.Join(got, "|") != `1 text "ok"|2 finish end_turn` {
		t.Fatalf("turn 6: %q, %v", got, err)
	}
}

func TestChunkResultAndErrors(t *testing.T) {
	m := parse(t, `{"turns":[
		{"reasoning":"héllo","text":"Résultat: {{result c1}} / {{ result c2 }}","chunk":3},
		{"text":"{{result nope}}"},
		{"error":{"kind":"overloaded","message":"busy","retry_after_ms":1500}},
		{"error":{"kind":"rate_limit","retryable":false}}]}`)
	req := &providers.ChatRequest{Messages: []*providers.Message{
		user("go"),
		{Role: providers.RoleTool, ToolCallId: "c1", Content: []*providers.Part{{Type: providers.PartText, Text: "391"}}},
		{Role: providers.RoleTool, ToolCallId: "c2", Content: []*providers.Part{{Type: providers.PartText, Text: "42"}}},
	}}
	got, err := play(t, m, req)
	want := `1 reasoning "hél"|2 reasoning "lo"|3 text "Rés"|4 text "ult"|5 text "at:"|6 text " 39"|7 text "1 /"|8 text " 42"|9 finish end_turn`
	if err != nil || strings.Join(got, "|") != want {
		t.Fatalf("turn 1: %v\n%s\nwant\n%s", err, strings.Join(got, "|"), want)
	}
	_, err = play(t, m, req)
	if err == nil || err.Error() != `provider: scripted: turn 2: text: {{result nope}}: the request has no tool message with tool_call_id "nope"` {
		t.Fatalf("turn 2: %v", err)
	}
	_, err = play(t, m, req)
	var pe *providers.Error
	if !errors.As(err, &pe) || *pe != (providers.Error{Kind: providers.KindOverloaded, Message: "busy", RetryAfter: 1500 * time.Millisecond, Retryable: true}) {
		t.Fatalf("turn 3: %+v", err)
	}
	_, err = play(t, m, req)
	if !errors.As(err, &pe) || *pe != (providers.Error{Kind: providers.KindRateLimit, Message: "scripted: turn 4: scripted rate_limit error"}) {
		t.Fatalf("turn 4: %+v", err)
	}
	_, err = play(t, m, req)
	if err == nil || err.Error() != "provider: scripted: out of turns: call 5, but the fixture has 4 turns" {
		t.Fatalf("call 5: %v", err)
	}
}

// TestDelayHonoursContext: a long delay_ms ends when the call is cancelled.
func TestDelayHonoursContext(t *testing.T) {
	m := parse(t, `{"turns":[{"text":"late","delay_ms":600000}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- m.Stream(ctx, &providers.ChatRequest{}, func(*providers.ChatEvent) error { return nil })
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not return 10s after cancellation")
	}
}

func TestRepeat(t *testing.T) {
	m := parse(t, `{"repeat":true,"turns":[{"text":"a"},{"text":"b"}]}`)
	var all []string
	for range 3 {
		got, err := play(t, m, &providers.ChatRequest{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got[0])
	}
	if strings.Join(all, "|") != `1 text "a"|1 text "b"|1 text "a"` {
		t.Fatalf("got %q", all)
	}
}

// Turns are counted per session by default, as a real model answers each conversation
// on its own: concurrent runs on a serve each play the fixture from its first turn.
// "per_session": false makes one sequence of every call.
func TestPerSessionTurnsAreCountedBySessionByDefault(t *testing.T) {
	req := func(s string) *providers.ChatRequest {
		return &providers.ChatRequest{Metadata: &providers.Metadata{Session: s}}
	}
	for fixture, want := range map[string]string{
		`{"per_session":true,"repeat":true,"turns":[{"text":"a"},{"text":"b"}]}`:  `s1:1 text "a"|s2:1 text "a"|s1:1 text "b"|s2:1 text "b"|s1:1 text "a"`,
		`{"repeat":true,"turns":[{"text":"a"},{"text":"b"}]}`:                     `s1:1 text "a"|s2:1 text "a"|s1:1 text "b"|s2:1 text "b"|s1:1 text "a"`,
		`{"per_session":false,"repeat":true,"turns":[{"text":"a"},{"text":"b"}]}`: `s1:1 text "a"|s2:1 text "b"|s1:1 text "a"|s2:1 text "b"|s1:1 text "a"`,
	} {
		m := parse(t, fixture)
		var all []string
		for _, s := range []string{"s1", "s2", "s1", "s2", "s1"} {
			got, err := play(t, m, req(s))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, s+":"+got[0])
		}
		if strings.Join(all, "|") != want {
			t.Fatalf("%s:\ngot  %q\nwant %q", fixture, strings.Join(all, "|"), want)
		}
	}
}

func TestScriptJSONOptionCarriesTheFixtureInline(t *testing.T) {
	m := scripted.New(nil)
	if err := m.Configure(context.Background(), map[string]string{"script_json": `{"turns":[{"text":"inline hi"}]}`}); err != nil {
		t.Fatal(err)
	}
	got, err := play(t, m, &providers.ChatRequest{Messages: []*providers.Message{user("x")}})
	if err != nil || !strings.Contains(strings.Join(got, " "), "inline hi") {
		t.Fatalf("%v %v", got, err)
	}
	err = m.Configure(context.Background(), map[string]string{"script_json": `{"turns":[{"txt":"typo"}]}`})
	if err == nil || !strings.Contains(err.Error(), "script_json") {
		t.Fatalf("bad inline fixture: %v", err)
	}
	err = m.Configure(context.Background(), map[string]string{"script_json": `{}`, "script": "x.json"})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("both: %v", err)
	}
}

// A fixture with stories serves each session the story its first user message names,
// turn after turn, whatever order sessions interleave in; a session no story matches
// gets a clear error.
func TestStoriesArePickedByTheFirstUserMessage(t *testing.T) {
	f, err := scripted.Parse([]byte(`{"stories": [
	  {"when": "capital of France", "turns": [{"text": "Paris"}, {"text": "Still Paris"}]},
	  {"when": "capital", "turns": [{"text": "Which country?"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(f)
	ask := func(session, first string) string {
		req := &providers.ChatRequest{Metadata: &providers.Metadata{Session: session}, Messages: []*providers.Message{user(first)}}
		got, err := play(t, m, req)
		if err != nil {
			return "error: " + err.Error()
		}
		return strings.Join(got, " ")
	}
	for _, c := range []struct{ session, first, want string }{
		{"a", "what is the capital of France?", `1 text "Paris" 2 finish end_turn`},
		{"b", "a capital question", `1 text "Which country?" 2 finish end_turn`},
		{"a", "what is the capital of France?", `1 text "Still Paris" 2 finish end_turn`},
		{"c", "hello", `error: provider: scripted: no story's when is part of the first user message "hello"`},
	} {
		if got := ask(c.session, c.first); got != c.want {
			t.Fatalf("session %s: %q, want %q", c.session, got, c.want)
		}
	}
	if _, err := scripted.Parse([]byte(`{"per_session": false, "stories": [{"when": "x", "turns": []}]}`)); err == nil || err.Error() != "stories need per_session" {
		t.Fatalf("stories without per_session: %v", err)
	}
}

// {{read PATH}} is the file's content as the adapter reads it, or why it cannot: how a
// test sees what a confined adapter may read.
func TestReadExpandsToAFileOrWhyNot(t *testing.T) {
	dir := t.TempDir()
	there := filepath.Join(dir, "there.txt")
	os.WriteFile(there, []byte("hello"), 0o644)
	missing := filepath.Join(dir, "missing.txt")
	m := parse(t, `{"turns":[{"text":"a={{read `+there+`}} b={{ read `+missing+` }}"}]}`)
	got, err := play(t, m, &providers.ChatRequest{Messages: []*providers.Message{user("go")}})
	if err != nil {
		t.Fatal(err)
	}
	want := "a=hello b=error: open " + missing + ": no such file or directory"
	if len(got) != 2 || got[0] != fmt.Sprintf("1 text %q", want) {
		t.Fatalf("events %q, want the text %q", got, want)
	}
}

// {{media}} names each media part the request carries, with the sha256 of its bytes
// (an image's as image data or as data), or says there is none.
func TestMediaExpandsToTheRequestsPartsAndTheirHashes(t *testing.T) {
	m := parse(t, `{"turns":[{"text":"{{media}}"},{"text":"{{media}}"}]}`)
	req := &providers.ChatRequest{Messages: []*providers.Message{{Role: providers.RoleUser, Content: []*providers.Part{
		{Type: providers.PartText, Text: "look"},
		{Type: providers.PartImage, MediaType: "image/png", ImageData: []byte("png")},
		{Type: providers.PartFile, MediaType: "application/pdf", Data: []byte("%PDF"), Name: "r.pdf"}}}}}
	got, err := play(t, m, req)
	want := `1 text "image image/png 3 B sha256:8f8cbb7dcf46e0bc7d53265749a6c17d116093a6ba95e442764060c76fd4a86c; file application/pdf 4 B sha256:315d429b7714cedb6ad04ac31240145257692630457f3c88253c5beceac76027"`
	if err != nil || len(got) != 2 || got[0] != want {
		t.Fatalf("%q %v, want %s", got, err, want)
	}
	if got, _ := play(t, m, &providers.ChatRequest{Messages: []*providers.Message{user("go")}}); got[0] != `1 text "no media"` {
		t.Fatalf("without media: %q", got)
	}
}
