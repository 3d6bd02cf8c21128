package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// sessions list --json, plugins list --json and plugins verify --json print JSON arrays
// whose fields a script can rely on.
func TestE2E_ListingsPrintJSONArrays(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "It is {{result c1}}."}]}`})
	if r := e.agenthost(t, "run", "What is 6*7?"); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	decode := func(args ...string) string {
		t.Helper()
		r := e.agenthost(t, args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}

	var sessions []struct {
		ID         string    `json:"id"`
		Title      string    `json:"title"`
		LastStatus string    `json:"last_status"`
		CostUSD    *float64  `json:"cost_usd"`
		Runs       int       `json:"runs"`
		Updated    time.Time `json:"updated"`
	}
	out := decode("sessions", "list", "--json")
	if err := json.Unmarshal([]byte(out), &sessions); err != nil {
		t.Fatalf("sessions list --json: %v\n%s", err, out)
	}
	if len(sessions) != 1 || !strings.HasPrefix(sessions[0].ID, "ses_") || sessions[0].Title != "What is 6*7?" ||
		sessions[0].LastStatus != "completed" || sessions[0].Runs != 1 || sessions[0].CostUSD == nil ||
		time.Since(sessions[0].Updated) > time.Hour {
		t.Fatalf("sessions list --json: %+v\n%s", sessions, out)
	}

	var plugins []struct {
		Name      string   `json:"name"`
		Kind      string   `json:"kind"`
		ABI       string   `json:"abi"`
		Sandboxed bool     `json:"sandboxed"`
		Tools     []string `json:"tools"`
	}
	out = decode("plugins", "list", "--json")
	if err := json.Unmarshal([]byte(out), &plugins); err != nil {
		t.Fatalf("plugins list --json: %v\n%s", err, out)
	}
	if len(plugins) != 2 || plugins[0].Name != "calc" || plugins[0].Kind != "tool" || plugins[0].ABI != "mcp" ||
		!plugins[0].Sandboxed || len(plugins[0].Tools) != 1 || plugins[0].Tools[0] != "calc" ||
		plugins[1].Name != "scripted" || plugins[1].Kind != "provider" || plugins[1].Sandboxed || len(plugins[1].Tools) != 0 {
		t.Fatalf("plugins list --json: %+v", plugins)
	}

	var checks []pluginCheck
	out = decode("plugins", "verify", "--json")
	if err := json.Unmarshal([]byte(out), &checks); err != nil {
		t.Fatalf("plugins verify --json: %v\n%s", err, out)
	}
	if len(checks) != 1 || checks[0] != (pluginCheck{Name: "calc", ABI: "mcp", Tools: 1, OK: true}) {
		t.Fatalf("plugins verify --json: %+v", checks)
	}
}

// plugins list shows every tool the model would see, the built-in ones too (A2A agents,
// memory), and needs no key for the embeddings provider it does not start.
func TestE2E_PluginsListShowsBuiltinToolsAndNeedsNoEmbeddingsKey(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": []}`})
	appendManifest(t, e.manifest, `
[providers.openai]
command = "agenthost-provider-openai"
env = ["OPENAI_API_KEY"]

[memory]
enabled = true
embeddings = { provider = "openai", model = "text-embedding-3-small" }

[[a2a_agents]]
name = "geo"
url = "http://127.0.0.1:9/a2a"
`)
	r := e.agenthost(t, "plugins", "list")
	if r.code != 0 {
		t.Fatalf("plugins list: %d\n%s", r.code, r.stderr)
	}
	for _, row := range []string{
		"calc      tool                 mcp   calc\n",
		"geo       a2a agent            http  a2a_geo\n",
		"memory    builtin              -     remember, recall, forget\n",
	} {
		if !strings.Contains(r.stdout, row) {
			t.Errorf("plugins list lacks %q:\n%s", row, r.stdout)
		}
	}
}
