package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A cached tool called by two `run`s runs once: the second run's transcript says the
// result came from the cache, and `insights` counts it as cached, not as a call.
func TestE2E_ACachedToolShowsInTheTranscriptAndInsights(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"per_session": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "{{result c1}}"}]}`})
	b, err := os.ReadFile(e.manifest)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(b), "name = \"calc\"\n", "name = \"calc\"\ncache = { ttl = \"1h\", scope = \"global\", tools = [\"calc\"] }\n", 1)
	if err := os.WriteFile(e.manifest, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	first := e.agenthost(t, "run", "6*7?")
	second := e.agenthost(t, "run", "6*7?")
	if first.code != 0 || second.code != 0 || strings.Contains(first.stdout, "(cached") || !strings.Contains(second.stdout, "← calc") ||
		!strings.Contains(second.stdout, "← calc [c1] 42 (cached, ") {
		t.Fatalf("first: %d %q %s\nsecond: %d %q %s", first.code, first.stdout, first.stderr, second.code, second.stdout, second.stderr)
	}
	r := e.agenthost(t, "insights", "--json")
	var rep struct {
		Tools []struct {
			Name          string
			Calls, Cached int
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Tools) != 1 || rep.Tools[0].Calls != 1 || rep.Tools[0].Cached != 1 {
		t.Fatalf("insights: %v %s", err, r.stdout)
	}
}
