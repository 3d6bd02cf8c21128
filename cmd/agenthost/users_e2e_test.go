package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audit"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// usersEnv is a server with four users (ana and bo users, vi a viewer, op an operator,
// root an admin), no admin token, and a model that asks for an approved calc call when
// the first message says "approve" and answers "hello" otherwise.
func usersEnv(t *testing.T) (*served, map[string]string) {
	t.Helper()
	e := newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", `{"stories": [
	  {"when": "approve", "turns": [
	    {"tool_calls": [{"id": "a1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	    {"text": "it is {{result a1}}"}]},
	  {"when": "hi", "turns": [{"text": "hello"}, {"text": "hello again"}, {"text": "and again"}]}]}`})
	tokens := map[string]string{}
	for _, u := range [][2]string{{"ana", "user"}, {"bo", "user"}, {"vi", "viewer"}, {"op", "operator"}, {"root", "admin"}} {
		r := e.agenthost(t, "users", "add", u[0], "--role", u[1])
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ah_") || !strings.Contains(r.stderr, "shown once") {
			t.Fatalf("users add %s: %d %q %q", u[0], r.code, r.stdout, r.stderr)
		}
		tokens[u[0]] = strings.TrimSpace(r.stdout)
	}
	if r := e.agenthost(t, "users", "add", "ana"); r.code == 0 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("adding ana twice: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "users", "add", "eve", "--role", "root"); r.code != 2 || !strings.Contains(r.stderr, "unknown role") {
		t.Fatalf("users add --role root: %d %s", r.code, r.stderr)
	}
	r := e.agenthost(t, "users", "list", "--json")
	var listed []struct{ Name, Role string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &listed) != nil || len(listed) != 5 || listed[0].Name != "ana" || listed[3].Role != "admin" {
		t.Fatalf("users list: %d %s", r.code, r.stdout)
	}
	if strings.Contains(r.stdout, tokens["ana"]) || strings.Contains(r.stdout, "token") {
		t.Fatalf("users list shows a token: %s", r.stdout)
	}
	return e.serve(t), tokens
}

// call sends a request as the token's user and returns the status and body (an SSE
// stream is read to its end).
func call(t *testing.T, s *served, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func runBody(thread, run, text string) string {
	return `{"threadId":"` + thread + `","runId":"` + run + `","messages":[{"id":"m` + run + `","role":"user","content":"` + text + `"}]}`
}

func approveBody(thread, run string) string {
	return `{"threadId":"` + thread + `","runId":"` + run + `","messages":[],"resume":[{"interruptId":"a1","status":"resolved","payload":{"approved":true}}]}`
}

// A user cannot read, continue, approve in, share or delete another user's session, over
// HTTP as the console calls it, until it is shared with them; a viewer starts nothing;
// an operator sees everything; the audit log records each action with its actor.
func TestE2E_SessionsBelongToTheirUserUntilShared(t *testing.T) {
	s, tok := usersEnv(t)
	ana, bo, vi, op, root := tok["ana"], tok["bo"], tok["vi"], tok["op"], tok["root"]

	// Once users exist, loopback is no excuse: no token, a wrong one, a JWT-shaped one.
	for _, bad := range []string{"", "ah_nottheone", "x.y.z"} {
		if code, body := call(t, s, bad, "GET", "/v1/sessions", ""); code != 401 {
			t.Fatalf("token %q: %d %s", bad, code, body)
		}
	}
	if code, body := call(t, s, ana, "GET", "/v1/whoami", ""); code != 200 || !strings.Contains(body, `"name":"ana","role":"user"`) {
		t.Fatalf("whoami: %d %s", code, body)
	}

	// ana starts s1, which stops on an approval; she may not run as bo.
	if code, body := call(t, s, ana, "POST", "/v1/runs", runBody("s1", "r1", "approve this")); code != 200 || !strings.Contains(body, "RUN_FINISHED") || !strings.Contains(body, `"interrupt"`) {
		t.Fatalf("ana's run: %d %s", code, body)
	}
	asBo := `{"threadId":"s9","runId":"r1","messages":[{"id":"m","role":"user","content":"hi"}],"forwardedProps":{"user":"bo"}}`
	if code, body := call(t, s, ana, "POST", "/v1/runs", asBo); code != 403 || !strings.Contains(body, `may not run as user \"bo\"`) {
		t.Fatalf("ana running as bo: %d %s", code, body)
	}

	// bo sees nothing of it: not listed, 404 everywhere, and his approval is refused.
	if code, body := call(t, s, bo, "GET", "/v1/sessions", ""); code != 200 || strings.Contains(body, `"s1"`) {
		t.Fatalf("bo's list: %d %s", code, body)
	}
	for _, req := range [][3]string{
		{"GET", "/v1/sessions/s1", ""},
		{"GET", "/v1/sessions/s1/runs/r1/events", ""},
		{"POST", "/v1/runs", approveBody("s1", "r2")},
		{"POST", "/v1/sessions/s1/runs/r1/feedback", `{"score": 1}`},
		{"POST", "/v1/sessions/s1/shares", `{"user": "bo", "role": "editor"}`},
		{"DELETE", "/v1/sessions/s1", ""},
	} {
		if code, body := call(t, s, bo, req[0], req[1], req[2]); code != 404 || !strings.Contains(body, `no session \"s1\"`) {
			t.Fatalf("bo %s %s: %d %s", req[0], req[1], code, body)
		}
	}
	// A viewer starts nothing, not even a session of their own.
	if code, body := call(t, s, vi, "POST", "/v1/runs", runBody("v1", "r1", "hi")); code != 403 || !strings.Contains(body, "viewer role") {
		t.Fatalf("viewer run: %d %s", code, body)
	}
	// Sharing: only with a user that exists; as viewer bo reads but cannot approve.
	if code, body := call(t, s, ana, "POST", "/v1/sessions/s1/shares", `{"user": "nobody", "role": "viewer"}`); code != 400 || !strings.Contains(body, `no user \"nobody\"`) {
		t.Fatalf("share with nobody: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "POST", "/v1/sessions/s1/shares", `{"user": "bo", "role": "owner"}`); code != 400 {
		t.Fatalf("share role owner: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "POST", "/v1/sessions/s1/shares", `{"user": "bo", "role": "viewer"}`); code != 201 {
		t.Fatalf("share: %d %s", code, body)
	}
	if code, body := call(t, s, bo, "GET", "/v1/sessions", ""); code != 200 || !strings.Contains(body, `"id":"s1"`) {
		t.Fatalf("bo's list after share: %d %s", code, body)
	}
	if code, body := call(t, s, bo, "GET", "/v1/sessions/s1", ""); code != 200 || !strings.Contains(body, "approve this") {
		t.Fatalf("bo reads: %d %s", code, body)
	}
	if code, body := call(t, s, bo, "POST", "/v1/runs", approveBody("s1", "r2")); code != 403 || !strings.Contains(body, "may not write") {
		t.Fatalf("viewer-share approve: %d %s", code, body)
	}
	if code, body := call(t, s, bo, "DELETE", "/v1/sessions/s1", ""); code != 403 {
		t.Fatalf("bo deletes a shared session: %d %s", code, body)
	}
	// As editor bo approves, and the call runs.
	if code, body := call(t, s, ana, "POST", "/v1/sessions/s1/shares", `{"user": "bo", "role": "editor"}`); code != 201 {
		t.Fatalf("share editor: %d %s", code, body)
	}
	if code, body := call(t, s, bo, "POST", "/v1/runs", approveBody("s1", "r2")); code != 200 || !strings.Contains(body, "it is 42") {
		t.Fatalf("bo approves: %d %s", code, body)
	}
	// Revoked, he is back to 404.
	req, _ := http.NewRequest("DELETE", s.base+"/v1/sessions/s1/shares/bo", nil)
	req.Header.Set("Authorization", "Bearer "+ana)
	req.Header.Set("X-Request-Id", "req-42")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("unshare: %v %v", resp, err)
	}
	if code, _ := call(t, s, bo, "GET", "/v1/sessions/s1", ""); code != 404 {
		t.Fatalf("bo after revoke: %d", code)
	}
	// Memories: bo cannot read ana's.
	if code, body := call(t, s, bo, "GET", "/v1/memory?user=ana", ""); code != 403 {
		t.Fatalf("bo reads ana's memories: %d %s", code, body)
	}
	// The operator sees and reads every session; only the admin reads the audit log.
	if code, body := call(t, s, op, "GET", "/v1/sessions/s1", ""); code != 200 {
		t.Fatalf("operator reads: %d %s", code, body)
	}
	if code, _ := call(t, s, op, "GET", "/v1/audit", ""); code != 403 {
		t.Fatalf("operator reads the audit log: %d", code)
	}
	if code, _ := call(t, s, ana, "GET", "/v1/insights", ""); code != 403 {
		t.Fatalf("a user reads insights: %d", code)
	}
	// ana deletes her session.
	if code, body := call(t, s, ana, "DELETE", "/v1/sessions/s1", ""); code != 204 {
		t.Fatalf("ana deletes: %d %s", code, body)
	}
	code, body := call(t, s, root, "GET", "/v1/audit", "")
	if code != 200 {
		t.Fatalf("audit: %d %s", code, body)
	}
	var log struct {
		Records []struct {
			Action, Actor, Target string
			Detail                map[string]string
		} `json:"records"`
		Verified bool `json:"verified"`
	}
	if err := json.Unmarshal([]byte(body), &log); err != nil || !log.Verified {
		t.Fatalf("audit: %v %s", err, body)
	}
	var got []string
	for _, r := range log.Records {
		got = append(got, r.Action+" "+r.Actor+" "+r.Target)
		if r.Action == "session.unshare" && r.Detail["request_id"] != "req-42" {
			t.Errorf("the unshare record lacks the request id: %+v", r)
		}
	}
	joined := strings.Join(got, "\n")
	// Records name users by id (the name is a label in the detail).
	anaID, boID, rootID := whoami(t, s, ana).ID, whoami(t, s, bo).ID, whoami(t, s, root).ID
	for _, want := range []string{"user.add cli user:" + anaID, "user.add cli user:" + rootID, "run.start " + anaID + " s1/r1", "approval " + boID + " s1/r2",
		"session.share " + anaID + " s1", "session.unshare " + anaID + " s1", "session.delete " + anaID + " s1"} {
		if !strings.Contains(joined, want) {
			t.Errorf("audit lacks %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "session.share "+boID) || strings.Contains(joined, "session.delete "+boID) {
		t.Errorf("a refused action was recorded:\n%s", joined)
	}
}

// whoami is the caller as the server sees them.
func whoami(t *testing.T, s *served, token string) struct{ ID, Name, Role string } {
	t.Helper()
	var p struct{ ID, Name, Role string }
	code, body := call(t, s, token, "GET", "/v1/whoami", "")
	if code != 200 || json.Unmarshal([]byte(body), &p) != nil || p.ID == "" {
		t.Fatalf("whoami: %d %s", code, body)
	}
	return p
}

// Two users racing to start the same new session id: one owns it, the other is refused.
func TestE2E_RacingFirstRunsOwnASessionOnce(t *testing.T) {
	s, tok := usersEnv(t)
	type res struct {
		code int
		body string
	}
	out := make(chan res, 2)
	for _, who := range []string{"ana", "bo"} {
		go func() {
			req, _ := http.NewRequest("POST", s.base+"/v1/runs", strings.NewReader(runBody("race", "r-"+who, "hi")))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok[who])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- res{0, err.Error()}
				return
			}
			defer resp.Body.Close()
			var sb strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				sb.WriteString(sc.Text() + "\n")
			}
			out <- res{resp.StatusCode, sb.String()}
		}()
	}
	a, b := <-out, <-out
	ok := 0
	for _, r := range []res{a, b} {
		switch r.code {
		case 200:
			ok++
		case 404, 409:
		default:
			t.Fatalf("unexpected answer %d %s", r.code, r.body)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of two racing first runs were let in: %+v %+v", ok, a, b)
	}
}

// With [auth.oidc], a JWT signed by the identity provider's key is a bearer token: its
// subject is the user and its role claim the role; sessions belong to the subject as
// they do to token users; a token signed by another key, for another audience or expired
// is refused.
func TestE2E_OIDCTokensAuthenticateUsers(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"stories": [{"when": "hi", "turns": [{"text": "hello"}]}]}`})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	if err := os.WriteFile(filepath.Join(e.dir, "jwks.json"), jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, "\n[auth.oidc]\nissuer = \"https://idp.test\"\naudience = \"agenthost\"\njwks_file = \"jwks.json\"\nrole_claim = \"agenthost_role\"\n")
	f.Close()
	sign := func(k *ecdsa.PrivateKey, sub, role, aud string, exp time.Duration) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		c := jwt.Claims{Issuer: "https://idp.test", Subject: sub, Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(time.Now().Add(exp))}
		extra := map[string]any{}
		if role != "" {
			extra["agenthost_role"] = role
		}
		tok, err := jwt.Signed(sig).Claims(c).Claims(extra).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s := e.serve(t)
	ana, bo := sign(key, "ana", "", "agenthost", time.Hour), sign(key, "bo", "", "agenthost", time.Hour)
	if code, body := call(t, s, "", "GET", "/v1/sessions", ""); code != 401 {
		t.Fatalf("no token with OIDC configured: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "POST", "/v1/runs", runBody("j1", "r1", "hi")); code != 200 || !strings.Contains(body, "hello") {
		t.Fatalf("ana's run: %d %s", code, body)
	}
	if code, _ := call(t, s, bo, "GET", "/v1/sessions/j1", ""); code != 404 {
		t.Fatalf("bo reads ana's session: %d", code)
	}
	// The store does not know OIDC users by name: a share names the grantee's id (the
	// issuer's and subject's), which the grantee's whoami shows.
	if code, body := call(t, s, ana, "POST", "/v1/sessions/j1/shares", `{"user": "bo", "role": "viewer"}`); code != 400 {
		t.Fatalf("share with an OIDC user by name: %d %s", code, body)
	}
	boID := whoami(t, s, bo).ID
	if !strings.HasPrefix(boID, "o_") || boID == whoami(t, s, ana).ID {
		t.Fatalf("OIDC ids: bo %q", boID)
	}
	if code, body := call(t, s, ana, "POST", "/v1/sessions/j1/shares", `{"user": "`+boID+`", "role": "viewer"}`); code != 201 {
		t.Fatalf("share with an OIDC user: %d %s", code, body)
	}
	if code, _ := call(t, s, bo, "GET", "/v1/sessions/j1", ""); code != 200 {
		t.Fatalf("bo after the share: %d", code)
	}
	if code, body := call(t, s, sign(key, "vi", "viewer", "agenthost", time.Hour), "POST", "/v1/runs", runBody("j2", "r1", "hi")); code != 403 {
		t.Fatalf("viewer claim runs: %d %s", code, body)
	}
	if code, body := call(t, s, sign(key, "op", "operator", "agenthost", time.Hour), "GET", "/v1/sessions/j1", ""); code != 200 {
		t.Fatalf("operator claim reads: %d %s", code, body)
	}
	for name, tok := range map[string]string{
		"another key":      sign(other, "ana", "", "agenthost", time.Hour),
		"another audience": sign(key, "ana", "", "other", time.Hour),
		"expired":          sign(key, "ana", "", "agenthost", -time.Minute),
		"unknown role":     sign(key, "ana", "root", "agenthost", time.Hour),
	} {
		if code, body := call(t, s, tok, "GET", "/v1/sessions", ""); code != 401 || !strings.Contains(body, "invalid bearer token") {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
}

// The commands that only manage the store open it alone (host.Options.StoreOnly): with a
// plugin that cannot compile, users add, users list, sessions list and audit list still
// work, compile nothing, and the audit log holds no config.load, since they loaded no
// configuration (a run or plugins list, which compile it, fail on the plugin).
func TestE2E_StoreCommandsOpenTheStoreAloneWithoutCompilingPlugins(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
	broken := filepath.Join(e.dir, "broken.wasm")
	if err := os.WriteFile(broken, []byte("\x00asm\x01\x00\x00\x00 not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := strings.Replace(string(must(os.ReadFile(e.manifest))), fmt.Sprintf("wasm = %q", calcWasm), fmt.Sprintf("wasm = %q", broken), 1)
	if err := os.WriteFile(e.manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.agenthost(t, "plugins", "list"); r.code == 0 || !strings.Contains(r.stderr, "calc") {
		t.Fatalf("plugins list with a broken plugin: exit %d %s", r.code, r.stderr)
	}
	r := e.agenthost(t, "users", "add", "ana")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ah_") || strings.Contains(r.stderr, "compiling") {
		t.Fatalf("users add: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"users", "list"}, {"sessions", "list"}, {"users", "rm", "ana"}} {
		if r := e.agenthost(t, args...); r.code != 0 || strings.Contains(r.stderr, "compiling") {
			t.Fatalf("%v: exit %d %q", args, r.code, r.stderr)
		}
	}
	var recs []audit.Record
	r = e.agenthost(t, "audit", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit list: %v %s %s", err, r.stdout, r.stderr)
	}
	var got []string
	for _, rec := range recs {
		got = append(got, rec.Action)
	}
	if strings.Join(got, " ") != "audit.genesis user.add user.remove" {
		t.Fatalf("audit actions %v, want audit.genesis user.add user.remove (no config.load)", got)
	}
}
