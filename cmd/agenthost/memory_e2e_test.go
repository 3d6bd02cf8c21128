package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

// The model of each session, one provider each (each run is a process of its own): Ana
// tells a fact and a preference, which the model stores with remember; her next session
// gets both in its system message; Bob's does not, his recall finds nothing, and his
// model's attempt to write into Ana's memory is refused by the tool's schema.
var memoryStory = [][2]string{
	{"ana1", `{"turns": [
  {"expect": {"contains": "genmaicha"}, "tool_calls": [
    {"id": "r1", "name": "remember", "arguments": "{\"text\": \"Ana's favourite tea is genmaicha\"}"},
    {"id": "r2", "name": "remember", "arguments": "{\"text\": \"Ana wants short answers\", \"kind\": \"preference\"}"}]},
  {"expect": {"last_role": "tool"}, "text": "Noted."}]}`},
	{"ana2", `{"turns": [
  {"expect": {"contains": "which tea", "system_contains": "- Ana's favourite tea is genmaicha (", "tools": ["calc", "remember", "recall", "forget"]}, "text": "Genmaicha, briefly."}]}`},
	{"bob", `{"turns": [
  {"expect": {"contains": "which tea", "system_lacks": "genmaicha"}, "tool_calls": [
    {"id": "b1", "name": "recall", "arguments": "{\"query\": \"favourite tea genmaicha\"}"},
    {"id": "b2", "name": "remember", "arguments": "{\"text\": \"Ana likes coffee now\", \"user\": \"ana\"}"}]},
  {"expect": {"last_role": "tool"}, "text": "I do not know yet."}]}`},
}

// A fact remembered in one session is recalled in another session of the same user and
// never in another user's; preferences are given on every run; the tools act for the
// run's user whatever the arguments say.
func TestE2E_MemoryIsRecalledAcrossSessionsOfOneUserOnly(t *testing.T) {
	e := newEnv(t, "", "", memoryStory...)
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	for i, run := range []struct{ user, provider, prompt, want string }{
		{"ana", "ana1", "my favourite tea is genmaicha; keep answers short", "Noted."},
		{"ana", "ana2", "which tea should I buy?", "Genmaicha, briefly."},
		{"bob", "bob", "which tea should I buy?", "I do not know yet."},
	} {
		r := e.agenthost(t, "run", "--json", "--provider", run.provider, "--user", run.user, run.prompt)
		if r.code != 0 || !strings.Contains(r.stdout, `"text":"`+run.want+`"`) {
			t.Fatalf("run %d (%s): exit %d\n%s\n%s", i, run.user, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, `"user":"`+run.user+`"`) {
			t.Fatalf("run %d: run_started does not name user %q:\n%s", i, run.user, r.stdout)
		}
		if i == 2 {
			if !strings.Contains(r.stdout, `"name":"recall","content":"[]","is_error":false`) {
				t.Fatalf("bob's recall found something:\n%s", r.stdout)
			}
			if !strings.Contains(r.stdout, `"name":"remember","content":"Error: invalid arguments for tool 'remember': /: additional properties 'user' not allowed","is_error":true`) {
				t.Fatalf("bob's remember with a user argument was not refused by the schema:\n%s", r.stdout)
			}
		}
	}
	var ana []memory.Entry
	r := e.agenthost(t, "memory", "list", "--user", "ana", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ana) != nil {
		t.Fatalf("memory list: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if len(ana) != 2 || ana[0].User != "ana" || ana[0].Session == "" || ana[0].Metadata["agent"] != "e2e" {
		t.Fatalf("ana's memories = %+v", ana)
	}
	kinds := map[memory.Kind]string{ana[0].Kind: ana[0].Text, ana[1].Kind: ana[1].Text}
	if kinds[memory.KindFact] != "Ana's favourite tea is genmaicha" || kinds[memory.KindPreference] != "Ana wants short answers" {
		t.Fatalf("ana's memories by kind = %v", kinds)
	}
	if r := e.agenthost(t, "memory", "list", "--user", "bob"); r.code != 0 || strings.TrimSpace(r.stdout) != "no memories" {
		t.Fatalf("bob has memories: %s %s", r.stdout, r.stderr)
	}
}

// The memory commands: add for a user and for an agent's users, search (with search
// syntax taken as words), rm by id, and erase of one user that leaves the others.
func TestE2E_MemoryCommandsManageAUsersMemories(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": []}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	id := strings.TrimSpace(e.agenthost(t, "memory", "add", "--user", "ana", "Ana drinks genmaicha").stdout)
	if !strings.HasPrefix(id, "mem_") {
		t.Fatalf("add printed %q", id)
	}
	e.agenthost(t, "memory", "add", "--user", "ana", "--kind", "preference", "Answers in French")
	e.agenthost(t, "memory", "add", "--user", "bob", "Bob drinks genmaicha too")
	e.agenthost(t, "memory", "add", "--agent", "e2e", "The shop sells genmaicha")
	var hits []memory.Hit
	r := e.agenthost(t, "memory", "search", "--user", "ana", "--agent", "e2e", "--json", `genmaicha" OR user:bob NEAR(`)
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hits) != nil {
		t.Fatalf("search: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	var texts []string
	for _, h := range hits {
		texts = append(texts, h.Text)
	}
	if strings.Join(texts, "|") != "Ana drinks genmaicha|The shop sells genmaicha" && strings.Join(texts, "|") != "The shop sells genmaicha|Ana drinks genmaicha" {
		t.Fatalf("ana's search saw %q", texts)
	}
	if r := e.agenthost(t, "memory", "rm", "--user", "bob", id); r.code != 1 || !strings.Contains(r.stderr, "no memory "+id) {
		t.Fatalf("bob removing ana's memory: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "memory", "rm", id); r.code != 0 || strings.TrimSpace(r.stdout) != "removed 1 memory" {
		t.Fatalf("rm: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "memory", "erase", "--user", "ana"); r.code != 0 || strings.TrimSpace(r.stdout) != "erased 1 memory" {
		t.Fatalf("erase: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "memory", "list", "--user", "bob"); !strings.Contains(r.stdout, "Bob drinks genmaicha too") {
		t.Fatalf("erasing ana touched bob: %s", r.stdout)
	}
	if r := e.agenthost(t, "memory", "erase"); r.code != 2 || !strings.Contains(r.stderr, "--user (or --agent") {
		t.Fatalf("erase without a user: exit %d %s", r.code, r.stderr)
	}
	big := strings.Repeat("x", memory.MaxText+1)
	if r := e.agenthost(t, "memory", "add", "--user", "ana", big); r.code != 2 || !strings.Contains(r.stderr, "longer than 4096") {
		t.Fatalf("huge memory: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "run", "--user", "bad\x01name", "hi"); r.code == 0 || !strings.Contains(r.stderr, "control character") {
		t.Fatalf("a user name with a control character: exit %d %s", r.code, r.stderr)
	}
}

func appendManifest(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
