package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ask calls ask_e2e on an MCP session and returns the answer, failing the test on an
// error result.
func ask(t *testing.T, ctx context.Context, cs *mcp.ClientSession, question string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_e2e", Arguments: map[string]any{"question": question}})
	if err != nil {
		t.Fatalf("ask %q: %v", question, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		t.Fatalf("ask %q: %s", question, text)
	}
	return text
}

// memoriesOf lists a user's memories through the CLI.
func memoriesOf(t *testing.T, e *agentEnv, user string) []memory.Entry {
	t.Helper()
	var out []memory.Entry
	r := e.agenthost(t, "memory", "list", "--user", user, "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
		t.Fatalf("memory list --user %s: %d %s %s", user, r.code, r.stdout, r.stderr)
	}
	return out
}

// ranFor checks that the session's run was for user (its run_started event).
func ranFor(t *testing.T, e *agentEnv, session, user string) {
	t.Helper()
	if r := e.agenthost(t, "sessions", "show", "--json", session); r.code != 0 || !strings.Contains(r.stdout, `"user":"`+user+`"`) {
		t.Fatalf("session %s was not run for %s: %d\n%s%s", session, user, r.code, r.stdout, r.stderr)
	}
}

// userID is the id of the present user named name.
func userID(t *testing.T, e *agentEnv, name string) string {
	t.Helper()
	var users []struct{ ID, Name string }
	r := e.agenthost(t, "users", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &users); err != nil {
		t.Fatalf("users list: %v %s", err, r.stdout)
	}
	for _, u := range users {
		if u.Name == name {
			return u.ID
		}
	}
	t.Fatalf("no user %s: %s", name, r.stdout)
	return ""
}

// Over stdio an MCP client is the user `mcp serve --user` names: a fact Ana's model
// remembers in one MCP session (one process) is recalled in her next one and never in
// Bob's, whose model's attempt to write into Ana's memory is refused.
func TestE2E_MCPStdioRunsAreTheUsersOfMCPServeUser(t *testing.T) {
	e := newEnv(t, "", "", memoryStory...)
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	for _, s := range []struct{ user, provider, question, want string }{
		{"ana", "ana1", "my favourite tea is genmaicha; keep answers short", "Noted."},
		{"ana", "ana2", "which tea should I buy?", "Genmaicha, briefly."},
		{"bob", "bob", "which tea should I buy?", "I do not know yet."},
	} {
		cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "serve", "--agent", "--provider", s.provider, "--user", s.user)
		cmd.Dir = e.dir
		ctx, cancel := context.WithTimeout(context.Background(), readyBound)
		// The client calls itself ana whoever it serves: its name is not who it is.
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ana", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := ask(t, ctx, cs, s.question); got != s.want {
			t.Fatalf("%s asked %q: %q, want %q", s.user, s.question, got, s.want)
		}
		cs.Close()
		cancel()
	}
	ana := memoriesOf(t, e, "ana")
	if len(ana) != 2 || ana[0].Session == "" {
		t.Fatalf("ana's memories %+v", ana)
	}
	ranFor(t, e, ana[0].Session, "ana")
	if bob := memoriesOf(t, e, "bob"); len(bob) != 0 {
		t.Fatalf("bob's memories %+v", bob)
	}
	if r := e.agenthost(t, "mcp", "serve", "--user", "bad\x01name"); r.code != 2 || !strings.Contains(r.stderr, "--user: user name") {
		t.Fatalf("--user with a control character: %d %s", r.code, r.stderr)
	}
}

// bearer adds a user's token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Over Streamable HTTP an MCP client is the user its token authenticates: Ana's fact,
// remembered in one of her MCP sessions, is recalled in another, and never for Bo asking
// the same question with his own token in his own session; Bo cannot use Ana's session,
// and without a token nobody gets in.
func TestE2E_MCPHTTPRunsAreTheAuthenticatedUsers(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"stories": [
	  {"when": "remember:", "turns": [
	    {"tool_calls": [{"id": "r1", "name": "remember", "arguments": "{\"text\": \"Ana's favourite tea is genmaicha\"}"}]},
	    {"expect": {"last_role": "tool"}, "text": "Noted."}]},
	  {"when": "bo here", "turns": [{"expect": {"system_lacks": "genmaicha"}, "text": "I do not know yet."}]},
	  {"when": "which tea", "turns": [{"expect": {"system_contains": "- Ana's favourite tea is genmaicha ("}, "text": "Genmaicha."}]}]}`})
	appendManifest(t, e.manifest, "\n[memory]\nenabled = true\n")
	tokens := map[string]string{}
	for _, u := range []string{"ana", "bo"} {
		r := e.agenthost(t, "users", "add", u, "--role", "user")
		if r.code != 0 {
			t.Fatalf("users add %s: %d %s", u, r.code, r.stderr)
		}
		tokens[u] = strings.TrimSpace(r.stdout)
	}
	s := e.serveArgs(t, "mcp", "serve", "--http", "127.0.0.1:0", "--agent")
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	connect := func(user string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ana", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{tokens[user]}}}, nil)
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	if got := ask(t, ctx, connect("ana"), "remember: my favourite tea is genmaicha"); got != "Noted." {
		t.Fatalf("ana's first session: %q", got)
	}
	ana2 := connect("ana")
	if got := ask(t, ctx, ana2, "which tea should I buy?"); got != "Genmaicha." {
		t.Fatalf("ana's second session: %q", got)
	}
	if got := ask(t, ctx, connect("bo"), "bo here: which tea should I buy?"); got != "I do not know yet." {
		t.Fatalf("bo's session: %q", got)
	}
	// Ana's MCP session is hers: Bo's token on it is refused; no token is refused.
	for who, tok := range map[string]string{"bo": tokens["bo"], "nobody": ""} {
		req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", ana2.ID())
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"bo": http.StatusForbidden, "nobody": http.StatusUnauthorized}[who]; resp.StatusCode != want {
			t.Fatalf("%s on ana's MCP session: %d, want %d", who, resp.StatusCode, want)
		}
	}
	ana := memoriesOf(t, e, "ana")
	if len(ana) != 1 || ana[0].Text != "Ana's favourite tea is genmaicha" {
		t.Fatalf("ana's memories %+v", ana)
	}
	ranFor(t, e, ana[0].Session, userID(t, e, "ana")) // a user's runs are for their id
	if bo := memoriesOf(t, e, "bo"); len(bo) != 0 {
		t.Fatalf("bo's memories %+v", bo)
	}
}
