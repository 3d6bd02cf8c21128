package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dbHolds reports whether the SQLite file or its WAL holds needle.
func dbHolds(t *testing.T, dir, needle string) bool {
	t.Helper()
	for _, p := range []string{"sessions.db", "sessions.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(needle)) {
			return true
		}
	}
	return false
}

// A store with key_file keeps no prompt, answer or tool data in clear in its file, yet
// every command reads it; without the key it refuses to open; a plain store given keys is
// sealed by rotate-key, and a rotation to a new key leaves the old one unneeded.
func TestE2E_StoreEncryptionAndKeyRotation(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "zanzibar answer {{result c1}}"},
	  {"text": "second zanzibar answer"}]}`})
	// First without keys: the secret is in the file, so the grep below proves something.
	if r := e.agenthost(t, "run", "--session", "s1", "--new", "the zanzibar prompt"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	// The tool call is looked for with its argument's name: "6*7" alone is three bytes
	// that a sealed file's random bytes hold now and then, by chance.
	const toolArgs = `expression\":\"6*7`
	if !dbHolds(t, e.dir, "zanzibar") || !dbHolds(t, e.dir, toolArgs) {
		t.Fatal("a plain store does not hold the prompt and the tool call: the test proves nothing")
	}
	gen := func() string {
		r := e.agenthost(t, "store", "keygen")
		if r.code != 0 || !strings.Contains(r.stdout, ":") {
			t.Fatalf("keygen: %d %s %s", r.code, r.stdout, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	k1, k2 := gen(), gen()
	keyFile := filepath.Join(e.dir, "store.key")
	writeKeys := func(mode os.FileMode, lines ...string) {
		if err := os.WriteFile(keyFile, []byte(strings.Join(lines, "\n")+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(keyFile, mode); err != nil {
			t.Fatal(err)
		}
	}
	manifest, _ := os.ReadFile(e.manifest)
	keyed := strings.Replace(string(manifest), `path = "sessions.db"`, `path = "sessions.db"`+"\nkey_file = \"store.key\"", 1)
	if err := os.WriteFile(e.manifest, []byte(keyed), 0o644); err != nil {
		t.Fatal(err)
	}
	// A key file others can read is refused.
	writeKeys(0o644, k1)
	if r := e.agenthost(t, "sessions", "list"); r.code == 0 || !strings.Contains(r.stderr, "readable by others") {
		t.Fatalf("world-readable key file: %d %s", r.code, r.stderr)
	}
	writeKeys(0o600, k1)
	r := e.agenthost(t, "store", "rotate-key", "--json")
	var st struct {
		Key                       string
		Entries, Values, Memories int
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || st.Entries < 4 || st.Key != strings.Split(k1, ":")[0] {
		t.Fatalf("rotate-key: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if dbHolds(t, e.dir, "zanzibar") {
		t.Fatal("after rotate-key the file still holds the prompt in clear")
	}
	// New runs are sealed as they are written; every command reads them.
	if r := e.agenthost(t, "run", "--session", "s1", "more zanzibar please"); r.code != 0 || !strings.Contains(r.stdout, "zanzibar answer 42") {
		t.Fatalf("run on the sealed store: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if dbHolds(t, e.dir, "zanzibar") || dbHolds(t, e.dir, toolArgs) {
		t.Fatal("a sealed store's file holds the run in clear")
	}
	if r := e.agenthost(t, "sessions", "show", "s1"); r.code != 0 || !strings.Contains(r.stdout, "the zanzibar prompt") || !strings.Contains(r.stdout, "zanzibar answer 42") {
		t.Fatalf("sessions show: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Without the key the store does not open, and says why.
	writeKeys(0o600, "# no keys here")
	if r := e.agenthost(t, "sessions", "list"); r.code == 0 || !strings.Contains(r.stderr, "no key") {
		t.Fatalf("empty key file: %d %s", r.code, r.stderr)
	}
	os.WriteFile(e.manifest, manifest, 0o644)
	if r := e.agenthost(t, "sessions", "list"); r.code == 0 || !strings.Contains(r.stderr, "the store is encrypted") {
		t.Fatalf("no key_file: %d %s", r.code, r.stderr)
	}
	os.WriteFile(e.manifest, []byte(keyed), 0o644)
	// Rotation: k2 first, k1 kept; rotate-key; then k2 alone reads everything.
	writeKeys(0o600, k2, k1)
	if r := e.agenthost(t, "store", "rotate-key", "--json"); r.code != 0 || !strings.Contains(r.stdout, strings.Split(k2, ":")[0]) {
		t.Fatalf("rotation: %d %s %s", r.code, r.stdout, r.stderr)
	}
	writeKeys(0o600, k2)
	if r := e.agenthost(t, "sessions", "show", "s1"); r.code != 0 || !strings.Contains(r.stdout, "more zanzibar please") {
		t.Fatalf("after rotation, the new key alone: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "audit", "list", "--json"); r.code != 0 || strings.Count(r.stdout, `"store.reseal"`) != 2 {
		t.Fatalf("audit of the reseals: %d %s", r.code, r.stdout)
	}
}
