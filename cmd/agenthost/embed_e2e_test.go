package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", to look into a PostgreSQL store
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

// enableEmbeddings turns [memory.embeddings] on in a manifest with [memory] enabled.
func enableEmbeddings(t *testing.T, manifest, model string) {
	t.Helper()
	m := string(must(os.ReadFile(manifest)))
	m = regexp.MustCompile(`(?m)^embeddings = .*\n`).ReplaceAllString(m, "")
	m = strings.Replace(m, "[memory]\nenabled = true\n", "[memory]\nenabled = true\nembeddings = { provider = \"scripted\", model = \""+model+"\" }\n", 1)
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Memories stored before embeddings were turned on have no vector, so a search by meaning
// misses them; `memory reindex` embeds them in batches, saying how far it got, one user's
// or everyone's, never twice; then the search finds them. A changed model makes every
// vector stale again. On SQLite and on PostgreSQL.
func TestE2E_MemoryReindexBackfillsVectors(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { reindexStory(t, false) })
	t.Run("postgres", func(t *testing.T) { reindexStory(t, true) })
}

func reindexStory(t *testing.T, pg bool) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"synonyms": {"apartment": "flat", "located": "lisbon"}, "turns": []}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	driver, dsn := "sqlite", filepath.Join(e.dir, "sessions.db")
	if pg {
		driver, dsn = "pgx", usePostgres(t, e)
	}
	for _, m := range [][2]string{{"ana", "Ana's flat is in Lisbon"}, {"ana", "Ana owns a red bicycle"}, {"bo", "Bo's flat is in Porto"}} {
		if r := e.agenthost(t, "memory", "add", "--user", m[0], m[1]); r.code != 0 || strings.Contains(r.stderr, "embeddings") {
			t.Fatalf("memory add: %d %s", r.code, r.stderr)
		}
	}
	if r := e.agenthost(t, "memory", "reindex"); r.code != 2 || !strings.Contains(r.stderr, "[memory.embeddings] is not set") {
		t.Fatalf("reindex without embeddings: %d %s", r.code, r.stderr)
	}
	enableEmbeddings(t, e.manifest, "")
	if r := e.agenthost(t, "memory", "search", "--user", "ana", "apartment located?"); r.code != 0 || strings.TrimSpace(r.stdout) != "no memories" {
		t.Fatalf("search by meaning before reindex: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Ana's, one per batch: "Ana's flat is in Lisbon" is 6 words (tokens), the bicycle 5.
	r := e.agenthost(t, "memory", "reindex", "--user", "ana", "--batch", "1")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || (lines[0] != "embedded 1/2 memories (6 tokens)" && lines[0] != "embedded 1/2 memories (5 tokens)") ||
		lines[1] != "embedded 2/2 memories (11 tokens)" || lines[2] != "reindexed 2 memories (11 tokens, charged to no run)" {
		t.Fatalf("reindex --user ana: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Everyone's: only Bo's is left.
	if r := e.agenthost(t, "memory", "reindex"); r.code != 0 || r.stdout != "embedded 1/1 memories (6 tokens)\nreindexed 1 memories (6 tokens, charged to no run)\n" {
		t.Fatalf("reindex of the rest: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "memory", "reindex"); r.code != 0 || r.stdout != "nothing to reindex: every memory has a vector of the current model\n" {
		t.Fatalf("reindex again: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "memory", "search", "--user", "ana", "apartment located?")
	if r.code != 0 || !strings.Contains(r.stdout, "Ana's flat is in Lisbon") || strings.Contains(r.stdout, "bicycle") || strings.Contains(r.stdout, "Porto") {
		t.Fatalf("search by meaning after reindex: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "agenthost: embeddings: 2 tokens, charged to no run\n") {
		t.Fatalf("the search's embedding is not reported: %q", r.stderr)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM memories WHERE length(vector) = 64 * 4 AND vector_model = 'scripted/'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("memories with a vector of scripted/: %d %v", n, err)
	}
	// Another model: every vector is stale.
	enableEmbeddings(t, e.manifest, "v2")
	if r := e.agenthost(t, "memory", "reindex"); r.code != 0 || !strings.HasSuffix(r.stdout, "reindexed 3 memories (17 tokens, charged to no run)\n") {
		t.Fatalf("reindex after a model change: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM memories WHERE vector_model = 'scripted/v2'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("memories with a vector of scripted/v2: %d %v", n, err)
	}
}

// An embedding made for a run is charged to the run's budget: a run whose recall
// embedding (100 words: 100 tokens) leaves too little of max_tokens = 150 for its model
// call (estimated at 110) stops budget_exceeded without making it, with the embedding in
// its usage. Without embeddings, the same run makes its call.
func TestE2E_EmbeddingSpendStopsARunAtItsBudget(t *testing.T) {
	e := newEnv(t, "max_tokens = 150", "", [2]string{"scripted", `{"turns": [{"text": "made the call"}]}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	prompt := strings.TrimSpace(strings.Repeat("tea ", 100))
	finished := func(r result) loop.RunFinishedData {
		t.Helper()
		for _, ev := range events(t, r.stdout) {
			if d, ok := ev.Data.(*loop.RunFinishedData); ok {
				return *d
			}
		}
		t.Fatalf("no run_finished:\n%s\n%s", r.stdout, r.stderr)
		return loop.RunFinishedData{}
	}
	r := e.agenthost(t, "run", "--json", "--user", "ana", prompt)
	if d := finished(r); r.code != 0 || d.Status != loop.StatusCompleted || !strings.Contains(r.stdout, `"text":"made the call"`) {
		t.Fatalf("without embeddings: exit %d, %s/%s", r.code, d.Status, d.Reason)
	}
	enableEmbeddings(t, e.manifest, "")
	r = e.agenthost(t, "run", "--json", "--user", "ana", prompt)
	d := finished(r)
	if r.code != 1 || d.Status != loop.StatusIncomplete || d.Reason != loop.ReasonBudgetExceeded || d.Usage.TotalTokens != 100 || strings.Contains(r.stdout, "made the call") {
		t.Fatalf("with embeddings: exit %d, %s/%s, usage %+v\n%s", r.code, d.Status, d.Reason, d.Usage, r.stderr)
	}
}
