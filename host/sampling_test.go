package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// openSamplingHost opens a host on a SQLite store (owners, the audit log) with the
// scripted provider playing fixture and extra appended to the manifest.
func openSamplingHost(t *testing.T, fixture, extra string) *Host {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(fixture), 0o644)
	m := fmt.Sprintf("[agent]\nprovider = \"scripted\"\nmodel = \"m1\"\n[providers.scripted]\ncommand = %q\n"+
		"options = { script = \"script.json\" }\n[store]\nkind = \"sqlite\"\npath = \"s.db\"\n%s", scriptedBin, extra)
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(m), 0o644)
	h, err := Open(context.Background(), Options{Manifest: p, CacheDir: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

const samplingReq = `{"messages":[{"role":"user","content":{"type":"text","text":"write to bob@example.com now"}}],"maxTokens":50}`

// A plugin's create_message goes through the door: the prompt passes the input
// guardrails ([redact] at input: the model sees "[email]"), the answer the output
// guardrails (the redact example plugin: the plugin gets "[redacted phone]"); the
// exchange is a run on a session of its own, owned by the calling run's user, which
// stores the redacted messages, and is audited with the principal, the caller and the
// calling run. Another user cannot sample as ana.
func TestCreateMessagePassesTheGuardrailsAndIsStoredAndAudited(t *testing.T) {
	h := openSamplingHost(t, `{"per_session": false, "turns": [
	  {"expect": {"tools_offered": false, "contains": "write to [email] now"}, "text": "call +1 415 555 0100"}]}`,
		"[redact]\nstages = [\"input\"]\n"+hookPlugin(t, "redact", "guardrail", ""))
	ana := access.Principal{ID: "u-ana", Name: "ana", Role: access.RoleUser}
	calling := loop.CallInfo{SessionID: "s-ana", RunID: "r-ana", User: "u-ana"}
	ctx := loop.WithCallInfo(access.WithPrincipal(context.Background(), ana), calling)
	out, err := h.services.CreateMessage(ctx, "p", json.RawMessage(samplingReq))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"content":{"text":"call [redacted phone]","type":"text"},"model":"m1","role":"assistant","stopReason":"endTurn"}` {
		t.Fatalf("result %s", out)
	}
	recs, err := h.Store.(audit.Store).Audit(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var session string
	var ends int
	for _, r := range recs {
		switch {
		case r.Action == audit.ActionRunStart && r.Detail["sampling"] == "plugin:p":
			if session != "" || r.Detail["actor_id"] != "u-ana" || r.Detail["calling_session"] != "s-ana" || r.Detail["calling_run"] != "r-ana" {
				t.Fatalf("sampling's run.start %+v", r)
			}
			session, _, _ = strings.Cut(r.Target, "/")
		case r.Action == audit.ActionRunEnd && r.Detail["status"] == "completed" && r.Detail["reason"] == "sampled":
			ends++
		}
	}
	if session == "" || session == "s-ana" || ends != 1 {
		t.Fatalf("no sampling run (session %q, %d ends) among %+v", session, ends, recs)
	}
	as, _ := h.Access()
	if owner, _ := as.Owner(context.Background(), session); owner != "u-ana" {
		t.Fatalf("the sampling's session %q is owned by %q, want ana's id", session, owner)
	}
	entries, _ := h.Store.Load(context.Background(), session)
	var stored []string
	for _, e := range entries {
		if e.Kind == loop.EntryMessage {
			stored = append(stored, string(e.Message.Role)+":"+e.Message.Text())
		}
	}
	if fmt.Sprint(stored) != "[user:write to [email] now assistant:call [redacted phone]]" {
		t.Fatalf("stored %q", stored)
	}
	bo := access.Principal{ID: "u-bo", Name: "bo", Role: access.RoleUser}
	boCtx := loop.WithCallInfo(access.WithPrincipal(context.Background(), bo), calling)
	if _, err := h.services.CreateMessage(boCtx, "p", json.RawMessage(samplingReq)); !errors.Is(err, access.ErrNotAllowed) {
		t.Fatalf("bo sampling as ana: %v, want not allowed", err)
	}
}

// A request the host cannot read is a clear error, never a model call: bad JSON, a
// role the sampling does not take, no messages.
func TestCreateMessageRefusesMalformedRequests(t *testing.T) {
	h := openSamplingHost(t, `{"turns": []}`, "")
	for req, want := range map[string]string{
		`{`: "the request",
		`{"messages":[{"role":"tool","content":{"type":"text","text":"x"}}]}`: `role "tool"`,
		`{"messages":[],"systemPrompt":"only this"}`:                          "no messages",
		`{"messages":[{"role":"user","content":{"type":"image"}}]}`:           "has no text",
	} {
		if _, err := h.services.CreateMessage(context.Background(), "p", json.RawMessage(req)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", req, err, want)
		}
	}
}
