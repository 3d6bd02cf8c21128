package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// frameTimestamp is an AG-UI frame's timestamp field.
var frameTimestamp = regexp.MustCompile(`"timestamp":[0-9]+,?`)

// sseFrames posts a run to a served host and returns every SSE frame's data up to
// RUN_FINISHED or RUN_ERROR.
func sseFrames(t *testing.T, s *served, body string) []string {
	t.Helper()
	resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /v1/runs: %d %s", resp.StatusCode, b)
	}
	var frames []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		frames = append(frames, data)
		if strings.Contains(data, `"type":"RUN_FINISHED"`) || strings.Contains(data, `"type":"RUN_ERROR"`) {
			return frames
		}
	}
	t.Fatalf("the stream ended before the run did:\n%s\n%s", strings.Join(frames, "\n"), s.log())
	return nil
}

// The attack of issue 46: with [redact] on the output stage only, a model's answer that
// streams e-mail addresses and card numbers in pieces of three characters (every
// detector's match split across deltas), written the three ways that passed every
// detector (a full-width @, a zero-width space inside an address, no-break spaces
// inside a card), reaches the client of a real `serve` with none of them in any SSE
// frame, and the text the client assembles from the deltas is the redacted answer.
func TestE2E_ServeRedactsTheAnswerBeforeItStreams(t *testing.T) {
	answer := "Mail ada@example.com, bob\uff20example.org or c\u200barol@example.net; cards 4111\u00a01111\u202f1111\u20071111 and 5555 5555 5555 4444. Done."
	fixture := fmt.Sprintf(`{"turns": [{"text": %q, "chunk": 3}]}`, answer)
	e := newEnv(t, "", "", [2]string{"scripted", fixture})
	appendManifest(t, e.manifest, "\n[redact]\nstages = [\"output\"]\n")
	s := e.serve(t)
	frames := sseFrames(t, s, `{"threadId":"t1","runId":"r1","messages":[{"id":"m","role":"user","content":"contacts?"}]}`)
	var text strings.Builder
	deltas := 0
	for _, f := range frames {
		// Every frame's "timestamp" is milliseconds since the epoch: its 13 digits hold
		// "1111" or "4111" now and then, by chance. It is no text of the run's, so the
		// search runs on the frame without it.
		content := frameTimestamp.ReplaceAllString(f, "")
		if content == f {
			t.Fatalf("a frame without a timestamp: %s", f)
		}
		for _, raw := range []string{"ada", "bob", "arol", "example", "4111", "1111", "5555", "4444"} {
			if strings.Contains(content, raw) {
				t.Fatalf("an SSE frame carries %q: %s", raw, f)
			}
		}
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(f), &ev); err != nil {
			t.Fatalf("frame %s: %v", f, err)
		}
		if ev.Type == "TEXT_MESSAGE_CONTENT" {
			// No piece of an address or a card either: the redacted answer has no digit
			// and no @, so a delta with one carries part of a match.
			if strings.ContainsAny(ev.Delta, "0123456789@\uff20\u200b\u00a0\u202f\u2007") {
				t.Fatalf("a delta carries part of an address or a card: %q", ev.Delta)
			}
			text.WriteString(ev.Delta)
			deltas++
		}
	}
	want := "Mail [email], [email] or [email]; cards [card] and [card]. Done."
	if text.String() != want {
		t.Fatalf("the client assembled %q, want %q", text.String(), want)
	}
	if deltas < 5 {
		t.Fatalf("%d text deltas: the answer did not stream in pieces", deltas)
	}
	if last := frames[len(frames)-1]; !strings.Contains(last, `"type":"RUN_FINISHED"`) || !strings.Contains(last, want) {
		t.Fatalf("the run's end: %s", last)
	}
}

// Memories pass [redact] before they are stored and before they reach the system
// message, whoever adds them: the remember tool (the model passes on what the user
// said) and the HTTP memory routes of `serve`, which go through the host's memory
// service like the tool. The SQLite file never holds the raw words. Each user's
// memories are bounded (max_per_user): past it the HTTP API answers 409 with the
// reason and the remember tool answers the model an error.
func TestE2E_ServeRedactsAndBoundsMemories(t *testing.T) {
	fixture := `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "remember", "arguments": "{\"kind\":\"preference\",\"text\":\"Ana writes from ana\\uff20example.org, card 4111\\u00a01111\\u00a01111\\u00a01111\"}"}]},
	  {"text": "Noted."},
	  {"expect": {"system_contains": "Ana writes from [email], card [card]", "system_lacks": "example.org"}, "text": "I remember."},
	  {"tool_calls": [{"id": "c2", "name": "remember", "arguments": "{\"text\":\"one fact too many\"}"}]},
	  {"text": "Full."}]}`
	e := newEnv(t, "", "", [2]string{"scripted", fixture})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\nmax_per_user = 4\n\n[redact]\nstages = [\"input\", \"store\"]\n")
	s := e.serve(t)
	run := func(thread string) []string {
		return sseFrames(t, s, fmt.Sprintf(`{"threadId":%q,"runId":"r1","messages":[{"id":"m","role":"user","content":"hello"}],"forwardedProps":{"user":"ana"}}`, thread))
	}
	run("t1")
	if frames := run("t2"); !strings.Contains(strings.Join(frames, "\n"), "I remember.") {
		t.Fatalf("the system message held the raw memory (the fixture's expect failed):\n%s", strings.Join(frames, "\n"))
	}

	add := func(text string) (int, string) {
		body, _ := json.Marshal(map[string]string{"user": "ana", "text": text})
		resp, err := http.Post(s.base+"/v1/memory", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := add("Bob is bob\u200b@example.com, IBAN DE89\u00a03704\u00a00044\u00a00532\u00a00130\u00a000"); code != 201 ||
		!strings.Contains(body, `"text":"Bob is [email], IBAN [iban]"`) {
		t.Fatalf("POST /v1/memory: %d %s", code, body)
	}
	for i := range 2 {
		if code, body := add(fmt.Sprintf("fact %d", i)); code != 201 {
			t.Fatalf("memory %d of 4: %d %s", i+3, code, body)
		}
	}
	if code, body := add("fact past the quota"); code != http.StatusConflict || !strings.Contains(body, "memory quota reached") ||
		!strings.Contains(body, "max_per_user") {
		t.Fatalf("past the quota: %d %s", code, body)
	}
	frames := strings.Join(run("t3"), "\n")
	if !strings.Contains(frames, `"type":"TOOL_CALL_RESULT"`) || !strings.Contains(frames, "memory quota reached") {
		t.Fatalf("remember past the quota did not answer the model the quota:\n%s", frames)
	}

	resp, err := http.Get(s.base + "/v1/memory?user=ana")
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		Text string `json:"text"`
	}
	json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if len(listed) != 4 {
		t.Fatalf("ana keeps %d memories, want 4: %+v", len(listed), listed)
	}
	// The card and IBAN digits are looked for as runs of their groups (raw, with a
	// space, or joined), never as a lone group: four digits alone turn up by chance
	// in a timestamp or an id in the file, which failed this test once in CI.
	for _, raw := range []string{"example.org", "example.com", "DE89", "4111\u00a01111", "4111 1111", "41111111",
		"3704\u00a00044", "3704 0044", "37040044"} {
		if dbHolds(t, e.dir, raw) {
			t.Fatalf("the store holds %q", raw)
		}
	}
}
