package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile is what a model answers, as a JSON string's body: an OSC 52 that sets the
// clipboard, a screen clear, bidi overrides, a carriage return that overwrites the line,
// a CRLF, and a C1 CSI.
const hostile = `A\u001b]52;c;aGk=\u0007B\u001b[2JC\u202eD\u2066E\r\nF\rG\u009b31mH`

// hostileRaw is hostile decoded.
var hostileRaw = func() string {
	var s string
	if err := json.Unmarshal([]byte(`"`+hostile+`"`), &s); err != nil {
		panic(err)
	}
	return s
}()

// wantNeutral fails when out holds a byte or rune a terminal acts on.
func wantNeutral(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"} {
		if strings.Contains(out, bad) {
			t.Fatalf("%s prints %q raw:\n%q", what, bad, out)
		}
	}
}

// A model's escapes, controls and bidi overrides reach no terminal: run's transcript
// (answer, reasoning, a tool call's arguments, its result), sessions show and errors
// print them visibly and inert, while --json keeps the exact text.
func TestTerminalOutputNeutralisesModelControlSequences(t *testing.T) {
	script := `{"turns": [
  {"reasoning": "` + hostile + `", "text": "` + hostile + `",
   "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+` + hostile + `\"}"}]},
  {"expect": {"last_role": "tool"}, "text": "` + hostile + `"}]}`
	e := newEnv(t, "", "", [2]string{"scripted", script})

	r := e.agenthost(t, "run", "go")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	wantNeutral(t, "run", r.stdout+r.stderr)
	for _, want := range []string{`A\x1b]52;c;aGk=\x07B\x1b[2JC\u202eD\u2066E`, `F\x0dG\u009b31mH`, "→ calc"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("run's transcript lacks %q:\n%s", want, r.stdout)
		}
	}

	r = e.agenthost(t, "run", "--json", "go")
	if r.code != 0 {
		t.Fatalf("run --json: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := events(t, r.stdout) // each line is JSON
	final := ""
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Text string `json:"text"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, sc.Text())
		}
		if ev.Type == "final" {
			final = ev.Data.Text
		}
	}
	if final != hostileRaw {
		t.Fatalf("--json final text %q, want the model's exact %q", final, hostileRaw)
	}

	show := e.agenthost(t, "sessions", "show", sessionOf(t, evs))
	if show.code != 0 {
		t.Fatalf("sessions show: exit %d\n%s", show.code, show.stderr)
	}
	wantNeutral(t, "sessions show", show.stdout+show.stderr)
	if !strings.Contains(show.stdout, `B\x1b[2JC\u202eD`) {
		t.Fatalf("sessions show:\n%s", show.stdout)
	}
	js := e.agenthost(t, "sessions", "show", sessionOf(t, evs), "--json")
	if js.code != 0 || !strings.Contains(js.stdout, hostileRaw[len(hostileRaw)-1:]) {
		t.Fatalf("sessions show --json: exit %d\n%s", js.code, js.stderr)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(js.stdout), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("sessions show --json line is not JSON: %q", line)
		}
		found = found || strings.Contains(line, `\u001b[2J`)
	}
	if !found {
		t.Fatalf("sessions show --json lost the text:\n%s", js.stdout)
	}

	// An error carrying model text (a session id is the caller's text here) is neutral too.
	bad := e.agenthost(t, "sessions", "show", "no\x1b[2Jsuch\u202e")
	if bad.code == 0 {
		t.Fatal("an unknown session shows")
	}
	wantNeutral(t, "an error", bad.stderr)
}

// eval's table and progress lines print a judge's reason and a case id inert.
func TestEvalTableNeutralisesModelControlSequences(t *testing.T) {
	reason := strings.ReplaceAll(hostile, `\`, `\\`)
	e := evalEnv(t, `{"when": "HOSTILE RUBRIC", "turns": [{"text": "{\"pass\": false, \"score\": 0, \"reason\": \"`+reason+`\"}"}]},
	  {"when": "Say hostile", "turns": [{"text": "`+hostile+`"}]},`)
	cases := filepath.Join(e.dir, "hostile.jsonl")
	os.WriteFile(cases, []byte(`{"id": "case\u001b[2J\u202e", "input": {"prompt": "Say hostile"}, "graders": [{"rubric": "HOSTILE RUBRIC"}]}`+"\n"), 0o644)
	r := e.agenthost(t, "eval", cases)
	if r.code != 1 {
		t.Fatalf("eval: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	wantNeutral(t, "eval", r.stdout+r.stderr)
	for _, want := range []string{`case\x1b[2J\u202e`, `A\x1b]52;c;aGk=\x07B\x1b[2JC\u202eD\u2066E`} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("eval's table lacks %q:\n%s", want, r.stdout)
		}
	}
}
