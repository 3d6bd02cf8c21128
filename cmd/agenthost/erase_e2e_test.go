package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// users erase deletes every session a user took part in, with its runs and feedback,
// and their memories, and nothing of anyone else's; --dry-run only lists; the deleted
// words are gone from the database files, not only from its tables.
func TestE2E_EraseUserDeletesTheirSessionsAndMemoriesOnly(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "noted"}]}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	for _, run := range [][]string{
		{"--user", "ana", "--session", "a1", "--new", "my secret is kumquat-4711"},
		{"--user", "bob", "--session", "b1", "--new", "bob's note"},
		{"--user", "ana", "--session", "a2", "--new", "another of ana's"},
	} {
		if r := e.agenthost(t, append([]string{"run"}, run...)...); r.code != 0 {
			t.Fatalf("run %v: exit %d %s", run, r.code, r.stderr)
		}
	}
	e.agenthost(t, "memory", "add", "--user", "ana", "ana's kumquat memory")
	e.agenthost(t, "memory", "add", "--user", "bob", "bob's memory")

	r := e.agenthost(t, "users", "erase", "ana", "--dry-run")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "would erase 2 sessions and 1 memories of ana\n") || !strings.Contains(r.stdout, "  a1\n") || !strings.Contains(r.stdout, "  a2\n") {
		t.Fatalf("dry run: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "sessions", "list"); !strings.Contains(r.stdout, "a1") {
		t.Fatalf("the dry run deleted: %s", r.stdout)
	}
	r = e.agenthost(t, "users", "erase", "ana")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "erased 2 sessions and 1 memories of ana\n") {
		t.Fatalf("erase: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = e.agenthost(t, "sessions", "list")
	if strings.Contains(r.stdout, "a1") || strings.Contains(r.stdout, "a2") || !strings.Contains(r.stdout, "b1") {
		t.Fatalf("sessions after erase:\n%s", r.stdout)
	}
	if r := e.agenthost(t, "memory", "list", "--user", "bob"); !strings.Contains(r.stdout, "bob's memory") {
		t.Fatalf("bob's memory: %s", r.stdout)
	}
	if r := e.agenthost(t, "audit", "list"); !strings.Contains(r.stdout, "user.erase") || !strings.Contains(r.stdout, "memories=1 sessions=2") {
		t.Fatalf("audit: %s", r.stdout)
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "sessions.db*"))
	for _, p := range files {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("kumquat")) {
			i := bytes.Index(b, []byte("kumquat"))
			t.Fatalf("%s still holds the erased words: %q", filepath.Base(p), b[max(i-60, 0):min(i+40, len(b))])
		}
	}
	if r := e.agenthost(t, "users", "erase", "bad\x01"); r.code != 1 || !strings.Contains(r.stderr, "control character") {
		t.Fatalf("a bad name: exit %d %s", r.code, r.stderr)
	}
}
