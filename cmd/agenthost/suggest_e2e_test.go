package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// `insights suggest` reads the stored runs and proposes a change for a failure that
// repeats, with its evidence and example runs; nothing is written. With nothing wrong it
// says so.
func TestE2E_InsightsSuggestProposesAChangeWithItsEvidence(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": false, "turns": [
	  {"error": {"kind": "auth", "message": "bad key"}},
	  {"error": {"kind": "auth", "message": "bad key"}},
	  {"error": {"kind": "auth", "message": "bad key"}}]}`})
	if r := e.agenthost(t, "insights", "suggest"); r.code != 0 || !strings.Contains(r.stdout, "nothing to suggest from 0 runs in the last 7d") {
		t.Fatalf("suggest on an empty store: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"t1", "t2", "t3"} {
		if r := e.agenthost(t, "run", "--new", "--session", s, "hi"); r.code != 1 {
			t.Fatalf("run %s: exit %d %s", s, r.code, r.stderr)
		}
	}
	r := e.agenthost(t, "insights", "suggest", "--json")
	var sug []struct {
		Kind, Target, Change, Evidence string
		Examples                       []struct{ Session, Run string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &sug); err != nil || r.code != 0 {
		t.Fatalf("suggest --json: exit %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if len(sug) != 1 || sug[0].Kind != "prompt" || !strings.Contains(sug[0].Change, "bad key") ||
		sug[0].Evidence != "3 runs ended failed/error with it" || len(sug[0].Examples) != 3 {
		t.Fatalf("suggestions %+v", sug)
	}
	if r := e.agenthost(t, "insights", "suggest"); r.code != 0 || !strings.HasPrefix(r.stdout, "1. [prompt] add to the system prompt") ||
		!strings.Contains(r.stdout, "because 3 runs ended failed/error with it (e.g. ") {
		t.Fatalf("suggest: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
