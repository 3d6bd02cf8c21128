package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Agent to agent over A2A, both agenthost: a served agent answers over A2A (its card is
// public, its JSON-RPC needs a token, its session is stored), and another agent calls it
// as the tool a2a_geo through its own tool pipeline. A remote that hangs, one that answers
// garbage and one that answers too much each give the model a clear error result, and
// the run goes on.
func TestE2E_AgentToAgentOverA2A(t *testing.T) {
	remote := newEnv(t, "", "", [2]string{"scripted", `{"stories": [{"when": "capital of France", "turns": [{"text": "Paris is the capital."}]}]}`})
	tok := strings.TrimSpace(remote.agenthost(t, "users", "add", "caller", "--role", "user").stdout)
	srv := remote.serve(t)

	// The card is public and says where to call.
	resp, err := http.Get(srv.base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(card), `"name":"e2e"`) || !strings.Contains(string(card), `/a2a"`) || !strings.Contains(string(card), `"bearer"`) {
		t.Fatalf("agent card: %d %s", resp.StatusCode, card)
	}
	// JSON-RPC without a token is refused.
	r, err := http.Post(srv.base+"/a2a", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 {
		t.Fatalf("A2A without a token: %d", r.StatusCode)
	}

	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client going away
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("not json at all")) }))
	defer junk.Close()
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":"x","result":{"kind":"message","role":"agent","messageId":"m","parts":[{"kind":"text","text":"` + strings.Repeat("a", 3<<20) + `"}]}}`))
	}))
	defer huge.Close()

	caller := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [
	    {"id": "g1", "name": "a2a_geo", "arguments": "{\"message\": \"What is the capital of France?\"}"},
	    {"id": "s1", "name": "a2a_slow", "arguments": "{\"message\": \"hello?\"}"},
	    {"id": "j1", "name": "a2a_junk", "arguments": "{\"message\": \"hello?\"}"},
	    {"id": "h1", "name": "a2a_huge", "arguments": "{\"message\": \"hello?\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "geo: {{result g1}} | slow: {{result s1}} | junk: {{result j1}} | huge: {{result h1}}"}]}`})
	appendManifest(t, caller.manifest, fmt.Sprintf(`
[[a2a_agents]]
name = "geo"
url = "%s/a2a"
token_env = "GEO_TOKEN"
description = "Knows capitals."

[[a2a_agents]]
name = "slow"
url = "%s"
timeout = "1s"

[[a2a_agents]]
name = "junk"
url = "%s"

[[a2a_agents]]
name = "huge"
url = "%s"
`, srv.base, hang.URL, junk.URL, huge.URL))
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", caller.manifest, "run", "what is the capital of France, ask geo")
	cmd.Dir = caller.dir
	cmd.Env = append(os.Environ(), "GEO_TOKEN="+tok)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("caller run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{"geo: Paris is the capital.", "slow: Error: agent slow did not answer within 1s", "junk: Error: agent junk:", "huge: Error: agent huge:"} {
		if !strings.Contains(got, want) {
			t.Errorf("caller's answer lacks %q:\n%s", want, got)
		}
	}
	if time.Since(start) > 5*time.Minute { // a hang guard, not a speed assertion
		t.Fatalf("the run took %s", time.Since(start))
	}
	// The remote stored the A2A conversation as a session of its own, the caller's user's.
	req, _ := http.NewRequest("GET", srv.base+"/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(list), `"id":"a2a-`) || !strings.Contains(string(list), "capital of France") {
		t.Fatalf("the remote's sessions: %s", list)
	}
	// Without the token variable set, the manifest says so.
	if r := caller.agenthost(t, "plugins", "list"); r.code != 2 || !strings.Contains(r.stderr, "a2a_agents[0].token_env: GEO_TOKEN is not set") {
		t.Fatalf("unset token_env: %d %s", r.code, r.stderr)
	}
}
