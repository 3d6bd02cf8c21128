package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agenthost/agenthost/audit"
)

// The surface matrix: every surface that enters the host, through the real binary, owes
// the same guarantees, because each goes through the host's one door (host.Door):
//
//   - audit: each entry's start and end are in the audit log, for the principal it was
//     made for (the actor; its role in the detail);
//   - span: each entry is an invoke_agent span at the OTLP receiver, naming the principal
//     (enduser.id);
//   - ledger: an entry that calls the model has its spend on the run's end record;
//   - foreign: a user who neither owns nor shares the session is refused with 404.
//
// A cell a surface cannot have says why in the table (a local user administers the
// store file; a tool call spends nothing). Before the door, `plugins call`, `mcp serve`'s
// tool calls and workflow tool steps wrote no audit record and no span.
func TestE2E_SurfaceMatrix_EverySurfaceIsAuditedTracedChargedAndAuthorisedByTheDoor(t *testing.T) {
	recv := newOTLPReceiver(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"repeat": true, "turns": [{"usage": {"prompt_tokens": 5, "completion_tokens": 2}, "text": "ok"}]}`})
	appendManifest(t, e.manifest, `
[workflows.door]
[[workflows.door.steps]]
id = "add"
tool = "calc"
arguments = { expression = "6*7" }
[[workflows.door.steps]]
id = "ask"
prompt = "hello"
depends_on = ["add"]
`)
	e.withTelemetry(t, recv.srv.URL)

	type surface struct {
		name      string
		enter     func(t *testing.T) // one entry for ana (or the local user)
		actor     string             // the audit log's actor
		actorIsID bool               // the actor is the user's id (a user of the API), not a label
		model     bool               // the entry calls the model: the ledger cell applies
		foreign   func(t *testing.T) // bo on ana's object; nil: see why
		why       string             // why there is no foreign cell
	}
	local := "a local user administers the store's file: the CLI's principal is an operator"
	var srv *served
	var tokens map[string]string
	var anaID string
	surfaces := []surface{
		{name: "cli run", actor: "ana", model: true, why: local, enter: func(t *testing.T) {
			if r := e.agenthost(t, "run", "--user", "ana", "--session", "m-run", "--new", "hi"); r.code != 0 {
				t.Fatalf("run: exit %d %s", r.code, r.stderr)
			}
		}},
		{name: "plugins call", actor: "ana", why: local, enter: func(t *testing.T) {
			if r := e.agenthost(t, "plugins", "call", "--user", "ana", "calc", "calc", `{"expression":"6*7"}`); r.code != 0 || !strings.Contains(r.stdout, "42") {
				t.Fatalf("plugins call: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
		}},
		{name: "mcp serve (stdio) tool call", actor: "ana", why: local + " (mcp serve --user)", enter: func(t *testing.T) {
			mcpCall(t, e, "calc", map[string]any{"expression": "6*7"}, "42")
		}},
		{name: "workflow run (tool and prompt steps)", actor: "anonymous", model: true, why: local, enter: func(t *testing.T) {
			if r := e.agenthost(t, "workflow", "run", "door"); r.code != 0 {
				t.Fatalf("workflow run: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
		}},
		{name: "serve HTTP POST /v1/runs", actor: "ana", actorIsID: true, model: true, enter: func(t *testing.T) {
			tokens = map[string]string{}
			for _, u := range []string{"ana", "bo"} {
				tokens[u] = strings.TrimSpace(e.agenthost(t, "users", "add", u, "--role", "user").stdout)
			}
			srv = e.serve(t)
			anaID = whoami(t, srv, tokens["ana"]).ID // a user's runs are recorded under their id
			if code, body := postRunAs(t, srv, tokens["ana"], "m-http"); code != 200 {
				t.Fatalf("ana's run: %d %s", code, body)
			}
		}, foreign: func(t *testing.T) {
			if code, body := postRunAs(t, srv, tokens["bo"], "m-http"); code != 404 || strings.Contains(body, "ana") || strings.Contains(body, "ok") {
				t.Fatalf("bo on ana's session: %d %s, want a 404 that tells nothing of it", code, body)
			}
		}},
	}
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			before := len(auditRecords(t, e))
			spans := len(recv.named("invoke_agent "))
			s.enter(t)
			recs := auditRecords(t, e)[before:]
			t.Run("audit", func(t *testing.T) {
				var starts, ends int
				for _, r := range recs {
					switch r.Action {
					case audit.ActionRunStart:
						starts++
					case audit.ActionRunEnd:
						ends++
					default:
						continue
					}
					want := s.actor
					if s.actorIsID {
						want = anaID
					}
					if r.Actor != want || r.Detail["actor_role"] == "" {
						t.Errorf("%s by %q (role %q), want %q", r.Action, r.Actor, r.Detail["actor_role"], want)
					}
				}
				if starts == 0 || starts != ends {
					t.Fatalf("%d run starts and %d ends in the audit log: %+v", starts, ends, recs)
				}
			})
			t.Run("span", func(t *testing.T) {
				want := principalID(t, e, s.actor)
				for _, sp := range waitSpans(t, recv, spans) {
					if who := spanAttr(sp, "enduser.id"); who != want {
						t.Errorf("span %s names enduser.id %q, want %q", sp.Name, who, want)
					}
				}
			})
			if s.model { // a tool call outside a run calls no model: nothing to charge
				t.Run("ledger", func(t *testing.T) {
					for _, r := range recs {
						if r.Action == audit.ActionRunEnd && r.Detail["tokens"] == "7" {
							return
						}
					}
					t.Fatalf("no run end charged the model call's 7 tokens: %+v", recs)
				})
			}
			if s.foreign == nil {
				t.Logf("foreign: no cell: %s", s.why)
				return
			}
			t.Run("foreign", s.foreign)
		})
	}
}

// principalID is what a span names the actor by: the user's id when the store has one
// for them, else their name ("" for anonymous).
func principalID(t *testing.T, e *agentEnv, actor string) string {
	t.Helper()
	if actor == "anonymous" {
		return ""
	}
	var users []struct{ ID, Name string }
	_ = json.Unmarshal([]byte(e.agenthost(t, "users", "list", "--json").stdout), &users)
	for _, u := range users {
		if u.Name == actor && u.ID != "" {
			return u.ID
		}
	}
	return actor
}

func auditRecords(t *testing.T, e *agentEnv) []audit.Record {
	t.Helper()
	r := e.agenthost(t, "audit", "list", "--json")
	var recs []audit.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s %s", err, r.stdout, r.stderr)
	}
	return recs
}

// waitSpans waits until the receiver has more invoke_agent spans than it had (a CLI
// process exports at exit, serve in batches) and returns the new ones.
func waitSpans(t *testing.T, recv *otlpReceiver, had int) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for {
		if got := recv.named("invoke_agent "); len(got) > had {
			return got[had:]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new invoke_agent span at the receiver (had %d)", had)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// postRunAs posts a run on thread as the token's user and reads the whole answer.
func postRunAs(t *testing.T, s *served, token, thread string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"threadId":%q,"runId":"r-%d","messages":[{"id":"m","role":"user","content":"hi"}]}`, thread, time.Now().UnixNano())
	req, _ := http.NewRequest("POST", s.base+"/v1/runs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mcpCall calls one tool of `mcp serve --user ana` over stdio and closes the client,
// so the process exits (and exports its spans).
func mcpCall(t *testing.T, e *agentEnv, tool string, args map[string]any, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyBound)
	defer cancel()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "serve", "--user", "ana")
	cmd.Dir = e.dir
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
}
