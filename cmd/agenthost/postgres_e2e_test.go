package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/store/pgtest"
)

// The binary on a PostgreSQL store ([store] kind = "postgres", url from the
// environment): a run with a tool call, a second run continuing the session, the
// session listed and replayed from the database; an unreachable server is a startup
// error that names it without the password.
func TestE2E_PostgresStore(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "It is {{result c1}}."},
	  {"expect": {"contains": "and doubled", "messages": 6}, "text": "84."}]}`})
	usePostgres(t, e)

	code, evs, stderr := e.runJSON(t, "what is 6*7?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sid := sessionOf(t, evs)
	code, evs2, stderr := e.runJSON(t, "--session", sid, "and doubled?")
	if code != 0 {
		t.Fatalf("continue: exit %d: %s", code, stderr)
	}
	if evs2[0].Seq != evs[len(evs)-1].Seq+1 {
		t.Fatalf("event seq %d does not follow %d", evs2[0].Seq, evs[len(evs)-1].Seq)
	}
	list := e.agenthost(t, "sessions", "list")
	if list.code != 0 || !strings.Contains(list.stdout, sid) || !strings.Contains(list.stdout, "what is 6*7?") || !strings.Contains(list.stdout, "completed") {
		t.Fatalf("sessions list: %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	replaysTheSame(t, e, append(evs, evs2...))

	t.Setenv("AGENTHOST_TEST_PG", "postgres://agent:s3cret@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	r := e.agenthost(t, "run", "hi")
	if r.code == 0 || strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "127.0.0.1:1/none") {
		t.Fatalf("unreachable server: exit %d\n%s", r.code, r.stderr)
	}
}

// usePostgres moves e's store to a new database of the test PostgreSQL server (its url in
// AGENTHOST_TEST_PG, which the manifest names) and returns the url.
func usePostgres(t *testing.T, e *agentEnv) string {
	t.Helper()
	url := pgtest.Start(t).NewDatabase(t)
	t.Setenv("AGENTHOST_TEST_PG", url)
	b, _ := os.ReadFile(e.manifest)
	pg := strings.Replace(string(b), "kind = \"sqlite\"\npath = \"sessions.db\"", "kind = \"postgres\"\nurl = \"${AGENTHOST_TEST_PG}\"", 1)
	if pg == string(b) {
		t.Fatal("the manifest has no sqlite store to replace")
	}
	if err := os.WriteFile(e.manifest, []byte(pg), 0o644); err != nil {
		t.Fatal(err)
	}
	return url
}
