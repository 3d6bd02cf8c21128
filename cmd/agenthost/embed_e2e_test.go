package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With [memory.embeddings], memories get vectors from the provider (here the scripted
// adapter, whose fixture says "apartment" means "flat"), and a search sharing no word with
// a memory finds it by similarity: the recall given to the model too. A provider without
// embeddings is refused when the host opens.
func TestE2E_MemoryEmbeddingsFindByMeaning(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"synonyms": {"apartment": "flat", "located": "lisbon"}, "turns": [
	  {"expect": {"system_contains": "Ana's flat is in Lisbon"}, "text": "In Lisbon."}]}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\nembeddings = { provider = \"scripted\" }\n")
	for _, text := range []string{"Ana's flat is in Lisbon", "Ana owns a red bicycle"} {
		if r := e.agenthost(t, "memory", "add", "--user", "ana", text); r.code != 0 {
			t.Fatalf("memory add: %d %s", r.code, r.stderr)
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM memories WHERE length(vector) = 64 * 4`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("memories with a 64-dimension vector: %d %v", n, err)
	}
	db.Close()
	// "apartment located" shares no word with either memory: only similarity finds it.
	r := e.agenthost(t, "memory", "search", "--user", "ana", "apartment located?")
	if r.code != 0 || !strings.Contains(r.stdout, "Ana's flat is in Lisbon") || strings.Contains(r.stdout, "bicycle") {
		t.Fatalf("search by meaning: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// The model's recall is the same search.
	if r := e.agenthost(t, "run", "--user", "ana", "where is my apartment located?"); r.code != 0 || !strings.Contains(r.stdout, "In Lisbon.") {
		t.Fatalf("run with recall: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Another user's search never finds Ana's memory, however near.
	if r := e.agenthost(t, "memory", "search", "--user", "bo", "apartment located flat lisbon"); r.code != 0 || strings.Contains(r.stdout, "Ana") {
		t.Fatalf("bo's search: %d %s", r.code, r.stdout)
	}
	// A provider without embeddings: a clear error when the host opens.
	m := strings.Replace(string(must(os.ReadFile(e.manifest))), `options = { script = "scripted.json" }`, `options = { script = "scripted.json", embeddings = "off" }`, 1)
	if err := os.WriteFile(e.manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.agenthost(t, "memory", "list", "--user", "ana"); r.code == 0 || !strings.Contains(r.stderr, `[memory.embeddings] provider "scripted" (scripted) has no embeddings`) {
		t.Fatalf("provider without embeddings: %d %s", r.code, r.stderr)
	}
}
