package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const tokenTailTS = `import { tool, config } from "agenthost";

tool({
  name: "token_tail",
  description: "Say how the caller's token ends",
  inputSchema: { type: "object", properties: {} },
  handler() {
    const t = config.get("token");
    return t === undefined ? "no token" : "token ends " + t.slice(-4);
  },
});
`

// A plugin's per-user secret (config = { token = { secret = "github", per_user = true } })
// is each calling user's own: ana sets hers at the CLI (stdin), bo his over HTTP, and each
// run's tool call sees its user's value; cy, who set none, is asked to, and after he sets
// it the resumed run goes on with it. Values are never shown back (GET /v1/secrets lists
// names) and are in no stored or exported byte: the store's file, the audit log, the
// session export, the traces, the server's log.
func TestE2E_PerUserPluginSecretsReachOnlyTheirUsersCalls(t *testing.T) {
	if err := jsRuntimeBeside(); err != nil {
		t.Fatal(err)
	}
	recv := newOTLPReceiver(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"stories": [{"when": "my token", "turns": [
	  {"tool_calls": [{"id": "c1", "name": "token_tail", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}]}`})
	key := e.agenthost(t, "store", "keygen")
	if err := os.WriteFile(filepath.Join(e.dir, "store.key"), []byte(key.stdout), 0o600); err != nil || key.code != 0 {
		t.Fatalf("keygen: %v %s", err, key.stderr)
	}
	os.WriteFile(filepath.Join(e.dir, "tail.ts"), []byte(tokenTailTS), 0o644)
	b, _ := os.ReadFile(e.manifest)
	m := strings.Replace(string(b), `path = "sessions.db"`, `path = "sessions.db"`+"\nkey_file = \"store.key\"", 1)
	m += "\n[[plugins]]\nname = \"tail\"\njs = \"tail.ts\"\n[plugins.permissions]\ntimeout = \"60s\"\nconfig = { token = { secret = \"github\", per_user = true }, plain = \"x\" }\n"
	os.WriteFile(e.manifest, []byte(m), 0o644)
	tok := map[string]string{}
	for _, u := range []string{"ana", "bo", "cy"} {
		r := e.agenthost(t, "users", "add", u)
		if r.code != 0 {
			t.Fatalf("users add %s: %d %s", u, r.code, r.stderr)
		}
		tok[u] = strings.TrimSpace(r.stdout)
	}
	secrets := map[string]string{"ana": "ghp-ana-7f3c9e1111", "bo": "ghp-bo-a8d0442222", "cy": "ghp-cy-c41be73333"}
	set := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "secrets", "set", "github", "--user", "ana")
	set.Dir, set.Stdin = e.dir, strings.NewReader(secrets["ana"]+"\n")
	if out, err := set.CombinedOutput(); err != nil || strings.Contains(string(out), secrets["ana"]) {
		t.Fatalf("secrets set: %v %s", err, out)
	}
	if r := e.agenthost(t, "secrets", "list", "--user", "ana"); r.code != 0 || r.stdout != "github\n" {
		t.Fatalf("secrets list: %d %q %s", r.code, r.stdout, r.stderr)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	s := e.serve(t)
	if code, body := call(t, s, tok["bo"], "PUT", "/v1/secrets/github", `{"value":"`+secrets["bo"]+`"}`); code != 204 {
		t.Fatalf("bo sets his secret: %d %s", code, body)
	}
	for _, bad := range [][2]string{{"/v1/secrets/no%20spaces", `{"value":"v"}`}, {"/v1/secrets/github", `{"value":""}`}, {"/v1/secrets/github", `{"val":"v"}`}} {
		if code, body := call(t, s, tok["bo"], "PUT", bad[0], bad[1]); code != 400 {
			t.Fatalf("PUT %s %s: %d %s, want 400", bad[0], bad[1], code, body)
		}
	}
	if code, body := call(t, s, "", "PUT", "/v1/secrets/github", `{"value":"anon"}`); code != 401 {
		t.Fatalf("without a token: %d %s", code, body)
	}
	if code, body := call(t, s, tok["bo"], "GET", "/v1/secrets", ""); code != 200 || body != `{"secrets":["github"]}`+"\n" {
		t.Fatalf("bo lists his secrets: %d %q", code, body)
	}
	for _, u := range []string{"ana", "bo"} {
		code, body := call(t, s, tok[u], "POST", "/v1/runs", runBody(u+"1", "r1", "my token"))
		if want := "token ends " + secrets[u][len(secrets[u])-4:]; code != 200 || !strings.Contains(body, want) {
			t.Fatalf("%s's run: %d %s, want %q", u, code, body, want)
		}
	}
	code, body := call(t, s, tok["cy"], "POST", "/v1/runs", runBody("cy1", "r1", "my token"))
	if code != 200 || !strings.Contains(body, `"reason":"input_required"`) || !strings.Contains(body, "Set your secret github") || strings.Contains(body, "token ends") {
		t.Fatalf("cy's first run is not asked for his secret: %d %s", code, body)
	}
	if code, body := call(t, s, tok["cy"], "PUT", "/v1/secrets/github", `{"value":"`+secrets["cy"]+`"}`); code != 204 {
		t.Fatalf("cy sets his secret: %d %s", code, body)
	}
	code, body = call(t, s, tok["cy"], "POST", "/v1/runs", `{"threadId":"cy1","runId":"r2","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":{"approved":true}}]}`)
	if code != 200 || !strings.Contains(body, "token ends 3333") {
		t.Fatalf("cy's resumed run: %d %s", code, body)
	}
	if code, _ := call(t, s, tok["cy"], "DELETE", "/v1/secrets/github", ""); code != 204 {
		t.Fatalf("cy deletes his secret: %d", code)
	}
	if code, _ := call(t, s, tok["cy"], "DELETE", "/v1/secrets/github", ""); code != 404 {
		t.Fatalf("deleting it again: %d", code)
	}

	var exports []string
	for _, sess := range []string{"ana1", "bo1", "cy1"} {
		r := e.agenthost(t, "sessions", "show", sess, "--json")
		if r.code != 0 {
			t.Fatalf("export %s: %s", sess, r.stderr)
		}
		exports = append(exports, r.stdout)
	}
	audit := e.agenthost(t, "audit", "list", "--json")
	if n := strings.Count(audit.stdout, `"secret.set"`); n != 3 {
		t.Fatalf("%d secret.set records, want 3: %s", n, audit.stdout)
	}
	spans := recv.allJSON(t, "execute_tool token_tail", 4)
	for u, secret := range secrets {
		for name, text := range map[string]string{"export": strings.Join(exports, "\n"), "audit log": audit.stdout, "traces": spans, "serve's log": s.log()} {
			if strings.Contains(text, secret) {
				t.Fatalf("%s's secret is in the %s", u, name)
			}
		}
		if dbHolds(t, e.dir, secret) {
			t.Fatalf("%s's secret is in the store's file", u)
		}
	}
	// Erasing a user forgets her secrets too.
	if r := e.agenthost(t, "users", "erase", "ana", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"credentials": 1`) {
		t.Fatalf("users erase: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.agenthost(t, "secrets", "list", "--user", "ana"); r.code != 0 || r.stdout != "" {
		t.Fatalf("ana's secrets after erasure: %d %q", r.code, r.stdout)
	}
}
