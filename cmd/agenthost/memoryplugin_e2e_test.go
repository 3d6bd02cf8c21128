package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/memory"
)

// A plugin of kind memory (plugins/examples/go/remember_phrases) extracts what a user
// asked to be remembered after their run, as that user's memories, and ranks what recall
// found before the next model call: with recall = 1 the memory the ranker puts first is
// the one the model gets, though the word search alone ranks the other first.
func TestE2E_MemoryPluginExtractsAndRanks(t *testing.T) {
	wasm := filepath.Join(repoRoot, "plugins/examples/go/remember_phrases/remember_phrases.wasm")
	if _, err := os.Stat(wasm); err != nil {
		cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "remember_phrases")
		cmd.Dir = repoRoot
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build remember_phrases: %v\n%s", err, b)
		}
	}
	e := newEnv(t, "", "", [2]string{"scripted", `{"stories": [
	  {"when": "Please remember", "turns": [{"text": "Noted."}]},
	  {"when": "locker code", "turns": [{"expect": {"system_contains": "- preference: I prefer short answers", "system_lacks": "changed"}, "text": "It is 4471."}]}]}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\nrecall = 1\n\n[[plugins]]\nname = \"remember_phrases\"\nkind = \"memory\"\nwasm = "+`"`+wasm+`"`+"\n")
	r := e.agenthost(t, "run", "--json", "--user", "ana", "Please remember that my bike is green. I prefer short answers.")
	if r.code != 0 || strings.Contains(r.stderr, "memory plugin") {
		t.Fatalf("run 1: %d %s", r.code, r.stderr)
	}
	session := sessionOf(t, events(t, r.stdout))
	var got []memory.Entry
	r = e.agenthost(t, "memory", "list", "--user", "ana", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || len(got) != 2 {
		t.Fatalf("memories after run 1: %d %s", r.code, r.stdout)
	}
	kinds := map[string]memory.Kind{}
	for _, m := range got {
		kinds[m.Text] = m.Kind
		if m.User != "ana" || m.Session != session || m.Metadata["by"] != "remember_phrases" {
			t.Fatalf("extracted memory %+v", m)
		}
	}
	if kinds["my bike is green"] != memory.KindFact || kinds["I prefer short answers"] != memory.KindPreference {
		t.Fatalf("extracted %v", kinds)
	}
	// The same run again extracts nothing new: the plugin sees what ana's memory holds.
	if r := e.agenthost(t, "run", "--user", "ana", "Please remember that my bike is green."); r.code != 0 {
		t.Fatalf("run 2: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "memory", "list", "--user", "ana", "--json"); strings.Count(r.stdout, `"my bike is green"`) != 1 {
		t.Fatalf("the fact was stored twice: %s", r.stdout)
	}
	for _, text := range []string{"my locker code is 4471, written on the old gym bag next to the spare keys", "locker code changed"} {
		if r := e.agenthost(t, "memory", "add", "--user", "ana", text); r.code != 0 {
			t.Fatalf("memory add: %d %s", r.code, r.stderr)
		}
	}
	// The word search alone puts the short one first ... (the long one is found by its
	// words: "4471" alone can be in a line's random hex id, before its text).
	if r := e.agenthost(t, "memory", "search", "--user", "ana", "what is my locker code?"); r.code != 0 ||
		strings.Index(r.stdout, "locker code changed") > strings.Index(r.stdout, "code is 4471,") {
		t.Fatalf("word search order: %s", r.stdout)
	}
	// ... the ranker the one sharing most of the question's words, which is what the model gets.
	if r := e.agenthost(t, "run", "--user", "ana", "what is my locker code?"); r.code != 0 || !strings.Contains(r.stdout, "It is 4471.") {
		t.Fatalf("run 3: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Another user's run extracts into their memory only.
	if r := e.agenthost(t, "run", "--user", "bo", "Please remember that my bike is red."); r.code != 0 {
		t.Fatalf("bo's run: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "memory", "list", "--user", "ana", "--json"); strings.Contains(r.stdout, "red") {
		t.Fatalf("bo's memory went to ana: %s", r.stdout)
	}
}
