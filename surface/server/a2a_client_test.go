package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
)

const a2aFixture = `{"stories": [
  {"when": "capital of France", "turns": [{"text": "Paris is the capital of France.", "chunk": 8}]},
  {"when": "17*23", "turns": [
    {"text": "Let me compute.", "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"17*23\"}"}]},
    {"expect": {"last_role": "tool"}, "text": "17*23 = {{result c1}}", "chunk": 6}]}
]}`

// TestA2AOfficialJSClient runs the official A2A JavaScript client (@a2a-js/sdk, in
// testdata/a2a-client, installed by `npm ci` from scripts/deps.d/serve.sh) against a served
// host, in each way it can reach it: its defaults (A2A 1.0 over JSON-RPC, chosen from the
// card's supportedInterfaces), 1.0 over HTTP+JSON, and its 0.3 mode given the card as a
// 0.3 client reads it. Each time, a streamed answer arrives as text deltas of an
// artifact while the task works, and a tool call waiting for an approval leaves the task
// input-required until "approve" in the same task completes it.
func TestA2AOfficialJSClient(t *testing.T) {
	clientDir, _ := filepath.Abs("testdata/a2a-client")
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules/@a2a-js/sdk")); err != nil {
		t.Fatalf("@a2a-js/sdk is not installed: run `make deps` (npm ci in %s): %v", clientDir, err)
	}
	manifest := writeManifest(t, t.TempDir(), a2aFixture, `require_approval = ["calc"]`, false)
	srv, _ := serveHost(t, manifest, "tok-a2a")
	// What went over the wire: each A2A request's version header and method (JSON-RPC) or
	// path (HTTP+JSON).
	var mu sync.Mutex
	var wire []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/a2a") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var rpc struct{ Method string }
			_ = json.Unmarshal(body, &rpc)
			mu.Lock()
			wire = append(wire, strings.TrimSpace(r.Header.Get("A2A-Version")+" "+r.Method+" "+r.URL.Path+" "+rpc.Method))
			mu.Unlock()
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	stream := []any{"task TASK_STATE_SUBMITTED", `status TASK_STATE_WORKING ""`,
		`artifact answer "Paris is"`, `artifact answer append " the cap"`, `artifact answer append "ital of "`, `artifact answer append "France."`,
		`artifact answer last "Paris is the capital of France."`,
		`status TASK_STATE_COMPLETED "Paris is the capital of France."`}
	computing := map[string]any{"name": "answer", "text": "Let me compute."}
	answered := map[string]any{"state": "TASK_STATE_COMPLETED", "status": "17*23 = 391",
		"artifacts": []any{computing, map[string]any{"name": "answer", "text": "17*23 = 391"}}}
	for _, c := range []struct {
		mode, protocol, version string
		wire                    []string
	}{
		{"jsonrpc", "JSONRPC", "1.0", []string{"1.0 POST /a2a SendStreamingMessage", "1.0 POST /a2a SendMessage", "1.0 POST /a2a SendMessage", "1.0 POST /a2a GetTask"}},
		{"rest", "HTTP+JSON", "1.0", []string{"1.0 POST /a2a/rest/message:stream", "1.0 POST /a2a/rest/message:send", "1.0 POST /a2a/rest/message:send", "1.0 GET /a2a/rest/tasks/ID"}},
		{"v0.3", "JSONRPC", "0.3", []string{"0.3 POST /a2a message/stream", "0.3 POST /a2a message/send", "0.3 POST /a2a message/send", "0.3 POST /a2a tasks/get"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			mu.Lock()
			wire = nil
			mu.Unlock()
			cmd := exec.Command("node", "client.mjs", ts.URL, "tok-a2a", c.mode)
			cmd.Dir = clientDir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("node client: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
			}
			var got map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("client output: %v\n%s", err, stdout.String())
			}
			want := map[string]any{"protocol": c.protocol, "version": c.version, "stream": stream,
				"asked": map[string]any{"state": "TASK_STATE_INPUT_REQUIRED",
					"status":    `approval required for calc: reply "approve" or give a reason to reject`,
					"artifacts": []any{computing}},
				"approved": answered, "got": answered}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the client saw\n%s\nwant\n%v", stdout.String(), want)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, w := range wire {
				if f := strings.Fields(w); len(f) == 3 && strings.HasPrefix(f[2], "/a2a/rest/tasks/") {
					wire[i] = strings.Join(f[:2], " ") + " /a2a/rest/tasks/ID"
				}
			}
			if !reflect.DeepEqual(wire, c.wire) {
				t.Errorf("requests %q, want %q", wire, c.wire)
			}
		})
	}
}

// The agent card asks for a bearer token exactly when the server needs one (issue 48: the
// card of an open server, with a user store but no users, asked for one), and names both
// versions' endpoints.
func TestA2ACardAsksForATokenOnlyWhenTheServerNeedsOne(t *testing.T) {
	manifest := writeManifest(t, t.TempDir(), a2aFixture, "", true)
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	withUser := &access.InMemory{}
	if _, err := withUser.AddUser(context.Background(), access.User{Name: "ana", Role: access.RoleUser, TokenHash: access.HashToken("x")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		token  string
		access access.Store
		need   bool
	}{
		{"no token, no user store", "", nil, false},
		{"no token, no users", "", &access.InMemory{}, false},
		{"a user", "", withUser, true},
		{"the administrator's token", "tok", &access.InMemory{}, true},
	} {
		srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: c.token, Access: c.access, Door: h.Door()})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		resp, err := http.Get(ts.URL + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		var card map[string]any
		err = json.NewDecoder(resp.Body).Decode(&card)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: card: %d %v", c.name, resp.StatusCode, err)
		}
		_, schemes := card["securitySchemes"]
		_, reqs := card["securityRequirements"]
		_, security := card["security"] // 0.3's name
		if schemes != c.need || reqs != c.need || security != c.need {
			t.Errorf("%s: card has securitySchemes %v, securityRequirements %v, security %v", c.name, schemes, reqs, security)
		}
		var ifaces []string
		for _, i := range card["supportedInterfaces"].([]any) {
			m := i.(map[string]any)
			ifaces = append(ifaces, strings.TrimPrefix(m["url"].(string), ts.URL)+" "+m["protocolBinding"].(string)+" "+m["protocolVersion"].(string))
		}
		want := []string{"/a2a JSONRPC 1.0", "/a2a/rest HTTP+JSON 1.0", "/a2a JSONRPC 0.3", "/a2a/rest HTTP+JSON 0.3"}
		if !reflect.DeepEqual(ifaces, want) || card["url"] != ts.URL+"/a2a" || card["protocolVersion"] != "0.3" || card["preferredTransport"] != "JSONRPC" {
			t.Errorf("%s: card interfaces %q, url %v, protocolVersion %v, preferredTransport %v", c.name, ifaces, card["url"], card["protocolVersion"], card["preferredTransport"])
		}
		ts.Close()
	}
}

// An A2A request larger than the server's body limit is refused with an error in either
// version and binding, and runs nothing.
func TestA2AHugeRequestsAreRefused(t *testing.T) {
	manifest := writeManifest(t, t.TempDir(), a2aFixture, "", true)
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	huge := strings.Repeat("capital of France ", 1000)
	for _, c := range []struct{ version, path, body string }{
		{"1.0", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + huge + `"}]}}}`},
		{"", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"` + huge + `"}]}}}`},
		{"1.0", "/a2a/rest/message:send", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + huge + `"}]}}`},
	} {
		req, _ := http.NewRequest("POST", ts.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("A2A-Version", c.version)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "error") || strings.Contains(string(b), "Paris") {
			t.Errorf("%s %s: %d %s", c.version, c.path, resp.StatusCode, b)
		}
	}
	if list, err := h.Store.(loop.SessionLister).Sessions(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("sessions after refused requests: %v %v", list, err)
	}
}
