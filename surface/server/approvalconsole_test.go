package server

import (
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
)

// grantFixture: each session plays the story its first message names; each story calls
// calc once (which the rule calc-asks asks about) and answers with the result.
const grantFixture = `{"stories": [
  {"when": "first", "turns": [{"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]}, {"text": "got {{result c1}}"}]},
  {"when": "second", "turns": [{"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]}, {"text": "got {{result c2}}"}]},
  {"when": "third", "turns": [{"tool_calls": [{"id": "c3", "name": "calc", "arguments": "{\"expression\":\"3+3\"}"}]}, {"text": "got {{result c3}}"}]}]}`

// grantHarness frames the console as ana and walks the grant flow, reporting
// "STAGE\nTHREAD\nDOM" at each stage: "asked" (the first run waits for approval),
// "chosen" (ana picked "for me for…" and 2 hours), "approved" (she approved: the run
// resumed), "grants" (the Grants panel), "granted" (a new session's calc call ran with no question),
// "revoked" (Revoke clicked: the panel is empty), "asked-again" (a third session's call
// asks again).
const grantHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage) => fetch("/harness-result", { method: "POST", body: stage + "\n" + f.contentDocument.getElementById("thread").textContent + "\n" + f.contentDocument.documentElement.outerHTML });
function waitFor(cond, then) { const t = () => { try { if (cond()) return then(); } catch (e) {} setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (s) => d.querySelector(s), runs = () => Number(d.body.dataset.runs || 0);
  const ask = (prompt) => { $("#new-session").click(); $("#prompt").value = prompt; $("#send").click(); };
  waitFor(() => $("#sessions").children.length > 0 && $("#whoami").textContent, () => {
    $("#send").click();
    waitFor(() => runs() >= 1 && $(".tool-card .approval .approve"), async () => {
      await report("asked");
      const scope = $(".tool-card .approval .scope");
      scope.value = "user"; scope.dispatchEvent(new Event("change"));
      $(".tool-card .approval .hours").value = "2";
      await report("chosen");
      $(".tool-card .approval .approve").click();
      waitFor(() => runs() >= 2, async () => {
        await report("approved");
        $("#show-grants").click();
        waitFor(() => d.body.dataset.grants, async () => {
          await report("grants");
          ask("second");
          waitFor(() => runs() >= 3, async () => {
            await report("granted");
            delete d.body.dataset.grants;
            $("#show-grants").click();
            waitFor(() => d.body.dataset.grants === "1", () => {
              $("#grants .revoke").click();
              waitFor(() => d.body.dataset.grants === "0", async () => {
                await report("revoked");
                ask("third");
                waitFor(() => runs() >= 4 && $(".tool-card .approval .approve"), () => report("asked-again"));
              });
            });
          });
        });
      });
    });
  });
};
</script></body></html>`

// grantEnv serves a real host (SQLite, the calc Wasm plugin, the rule calc-asks) with
// the user name, and harness at /grant-harness: it returns the server, the host, the
// user's token and what the harness reports.
func grantEnv(t *testing.T, name, harness string) (*httptest.Server, *host.Host, string, <-chan string) {
	dir := t.TempDir()
	m := writeManifest(t, dir, grantFixture, "", false)
	f, _ := os.OpenFile(m, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString("\n[[approvals]]\nname = \"calc-asks\"\nwhen = 'tool == \"calc\"'\ndecision = \"ask\"\n")
	f.Close()
	h, err := host.Open(context.Background(), host.Options{Manifest: m, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	tok, err := h.AddUser(context.Background(), name, access.RoleUser, "test")
	if err != nil {
		t.Fatal(err)
	}
	as, _ := h.Access()
	srv, err := New(Options{Agent: h.Runner(), Store: h.Store, Access: as, Door: h.Door()})
	if err != nil {
		t.Fatal(err)
	}
	ts, results := serveHarness(t, srv, "/grant-harness", harness, 8)
	return ts, h, tok, results
}

// grantStage waits for one stage of grantHarness: the session it shows and its DOM.
func grantStage(t *testing.T, results <-chan string, name string) (thread, dom string) {
	t.Helper()
	thread, dom, _ = strings.Cut(stage(t, results, name), "\n")
	return thread, dom
}

// In the console, a call waiting for approval shows the rule that asked and when the
// request expires, with Approve / Deny and the scope of a yes. Ana approves "for me for
// 2 hours": the run resumes and calc runs; the Grants panel lists the grant; a call in
// another session of hers is answered by the grant with no question; Revoke removes it
// from the panel and the store, and the next call asks again. Checked in Chromium
// against the store; screenshots are written for a reviewer.
func TestConsoleGivesListsAndRevokesAGrantForMeForNHours(t *testing.T) {
	ts, h, tok, results := grantEnv(t, "ana", grantHarness)
	ctx := context.Background()
	proc := startChromium(t, ts.URL+"/grant-harness#token="+tok+"&session=g-1&prompt=first")

	_, dom := grantStage(t, results, "asked")
	entries, err := h.Store.Load(ctx, "g-1")
	if err != nil {
		t.Fatal(err)
	}
	var asked loop.ToolCallData
	for _, e := range entries {
		if e.Event != nil && e.Event.Type == loop.EventApproval {
			asked = *e.Event.Data.(*loop.ToolCallData)
		}
	}
	if asked.ExpiresAt == "" || asked.Rule != "calc-asks" {
		t.Fatalf("stored request %+v", asked)
	}
	mustContain(t, "asked", dom,
		`<div class="tool-card awaiting" data-call-id="c1"><div class="head"><span class="name">calc</span><span class="state">awaiting approval</span>`,
		"<pre class=\"args\">{\n  \"expression\": \"1+1\"\n}</pre>",
		`<dt>asked by rule</dt><dd class="rule">calc-asks</dd>`,
		`<dt>expires</dt><dd class="expires" data-at="`+asked.ExpiresAt+`">`,
		`<option value="once">this call once</option><option value="session">for this session</option><option value="user">for me for…</option>`,
		`<label class="hours-field" hidden=""><input class="hours" type="number" min="1" max="8784"> hours</label>`,
		`<label class="for-rule-field" hidden=""><input class="for-rule" type="checkbox"> the rule, not only calc</label>`,
		`<button class="primary approve">Approve</button><button class="reject">Deny</button>`,
	)

	_, dom = grantStage(t, results, "chosen")
	mustContain(t, "chosen", dom, // "for me for…" shows the hours and the choice of the rule
		`<label class="hours-field"><input class="hours" type="number" min="1" max="8784"> hours</label>`,
		`<label class="for-rule-field"><input class="for-rule" type="checkbox"> the rule, not only calc</label>`)

	_, dom = grantStage(t, results, "approved")
	mustContain(t, "approved", dom,
		`<div class="tool-card" data-call-id="c1"><div class="head"><span class="name">calc</span><span class="state">done</span>`,
		`<pre class="result">2</pre>`, `<div class="msg assistant">got 2</div>`,
		`<span id="status" class="">finished: completed</span>`)
	gs, err := h.Grants(ctx)
	if err != nil || len(gs) != 1 {
		t.Fatalf("stored grants %+v %v", gs, err)
	}
	g := gs[0]
	if g.Scope != loop.ScopeUser || g.Tool != "calc" || g.User == "" || g.By != g.User || g.Expires.Sub(g.Created) != 2*time.Hour {
		t.Fatalf("grant %+v: want calc for ana for 2 hours", g)
	}

	_, dom = grantStage(t, results, "grants")
	mustContain(t, "grants", dom,
		`<tr class="grant" data-id="`+g.ID+`"><td class="allows">calc</td><td class="scope">user</td><td class="for" title="`+g.User+`">user ana</td><td class="by" title="`+g.By+`">ana</td>`,
		`data-at="`+g.Expires.UTC().Format(time.RFC3339Nano)+`"`, `<button class="revoke">Revoke</button>`)

	second, dom := grantStage(t, results, "granted")
	mustContain(t, "granted", dom, `<span class="name">calc</span><span class="state">done</span>`, `<pre class="result">4</pre>`, `<div class="msg assistant">got 4</div>`)
	if strings.Contains(dom, `class="approval"`) {
		t.Fatalf("the granted call asked:\n%s", dom)
	}
	entries, err = h.Store.Load(ctx, second)
	if err != nil || len(entries) == 0 {
		t.Fatalf("session %s: %v", second, err)
	}
	for _, e := range entries {
		if e.Event != nil && e.Event.Type == loop.EventApproval {
			t.Fatalf("session %s stored an approval request: the grant did not answer it", second)
		}
	}

	_, dom = grantStage(t, results, "revoked")
	mustContain(t, "revoked", dom, `<div class="muted no-grants">no grants</div>`)
	if gs, err := h.Grants(ctx); err != nil || len(gs) != 0 {
		t.Fatalf("after Revoke the store holds %+v %v", gs, err)
	}
	third, dom := grantStage(t, results, "asked-again")
	mustContain(t, "asked-again", dom, `<div class="tool-card awaiting" data-call-id="c3">`, `<button class="primary approve">Approve</button>`)
	stopChromium(proc)

	// Screenshots: the third call waiting with its choices; then, answered over HTTP
	// with a grant for this session, the Grants panel.
	shots := screenshotsDir(t)
	shoot(t, filepath.Join(shots, "console-approval-scope.png"), ts.URL+"/#token="+tok+"&session="+third)
	e := &testEnv{ts: ts, token: tok}
	evs := e.run(t, resumeBody(third, "r-shot", "c3", `{"approved": true, "scope": "session", "args_hash": "`+loop.ArgsHash(`{"expression":"3+3"}`)+`"}`))
	if typ, _ := finishedOutcome(t, evs); typ != "success" {
		t.Fatalf("resume over HTTP: %v", brief(evs))
	}
	shoot(t, filepath.Join(shots, "console-grants.png"), ts.URL+"/#token="+tok+"&session="+third+"&grants=1")
}

// shoot saves a 1200×800 screenshot of url.
func shoot(t *testing.T, shot, url string) {
	t.Helper()
	chromium(t, "--screenshot="+shot, "--window-size=1200,800", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	cfg, err := png.DecodeConfig(f)
	f.Close()
	if err != nil || cfg.Width != 1200 || cfg.Height != 800 {
		t.Fatalf("screenshot %s: %+v %v", shot, cfg, err)
	}
	t.Logf("screenshot: %s", shot)
}
