package server

import (
	"context"
	"encoding/json"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// consoleFixture: the first answer reasons, talks and calls calc (which needs approval);
// after the approval the second answers with the result and some would-be HTML.
const consoleFixture = `{"per_session": true, "turns": [
  {"reasoning": "I should use calc.", "text": "Let me compute.", "chunk": 5,
   "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"17*23\"}"}], "args_chunk": 6,
   "usage": {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.0012}},
  {"expect": {"last_role": "tool"}, "text": "17*23 = {{result c1}} <b>not bold</b>",
   "usage": {"prompt_tokens": 130, "completion_tokens": 10, "cost_usd": 0.0015}}
]}`

// consoleHarness frames the console (same origin), clicks Run, reports the DOM when the
// run has stopped for approval ("interrupted"); with act=approve it clicks Approve in
// the tool card, reports when that run has ended ("done"), opens the last run's raw
// events and reports again ("raw"), then searches for a text no session has
// ("search"). Each report is "STAGE\n" + the frame's DOM, posted to /harness-result.
const consoleHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const q = new URLSearchParams(location.search), f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage) => fetch("/harness-result", { method: "POST", body: stage + "\n" + f.contentDocument.documentElement.outerHTML });
function waitFor(cond, then) { const t = () => { try { if (cond()) return then(); } catch (e) {} setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (s) => d.querySelector(s), runs = () => Number(d.body.dataset.runs || 0);
  waitFor(() => $("#sessions").children.length > 0 && $("#plugins .plugin"), () => {
    $("#send").click();
    waitFor(() => runs() >= 1 && $(".tool-card .approval .approve"), async () => {
      await report("interrupted");
      if (q.get("act") !== "approve") return;
      $(".tool-card .approval .approve").click();
      waitFor(() => runs() >= 2, async () => {
        await report("done");
        [...d.querySelectorAll(".raw-link")].pop().click();
        waitFor(() => $("#raw .raw-events"), async () => {
          await report("raw");
          $("#search").value = "no-such-text-anywhere";
          $("#search").dispatchEvent(new Event("input"));
          waitFor(() => /no session matches/.test($("#sessions").textContent), () => report("search"));
        });
      });
    });
  });
};
</script></body></html>`

// consoleEnv serves a real host (scripted provider, calc Wasm needing approval, SQLite)
// with the plugin list, and the harness on the same origin.
func consoleEnv(t *testing.T) (*httptest.Server, *host.Host, <-chan string) {
	dir := t.TempDir()
	manifest := writeManifest(t, dir, consoleFixture, `require_approval = ["calc"]`, false)
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "console-token", Plugins: func() any { return h.PluginInfo() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() }) // after the server is drained
	ts, results := serveHarness(t, srv, "/harness", consoleHarness, 8)
	return ts, h, results
}

// stage waits for the harness's report of one stage and returns its DOM.
func stage(t *testing.T, results <-chan string, name string) string {
	t.Helper()
	select {
	case res := <-results:
		got, dom, _ := strings.Cut(res, "\n")
		if got != name {
			t.Fatalf("harness reported stage %q, want %q", got, name)
		}
		return dom
	case <-time.After(90 * time.Second): // a hang guard, not a speed assertion
		t.Fatalf("the harness did not report stage %q", name)
		return ""
	}
}

func mustContain(t *testing.T, what, dom string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(dom, w) {
			t.Errorf("%s: DOM lacks %s", what, w)
		}
	}
	if t.Failed() {
		t.Fatalf("%s DOM:\n%s", what, dom)
	}
}

// TestConsoleInChromium drives the web console in headless Chromium through a scripted
// run: the tool call needing approval shows as a card with its arguments and inline
// Approve/Deny; approving it runs the call, and the card gets its result and
// duration; reasoning is folded; usage and cost add up over both runs; the session is
// listed under its title; the plugin panel shows calc's permissions; each run links to
// its raw events; search filters the sessions; text from the model stays text.
// Screenshots are saved in the test's artifact directory (go test -artifacts).
func TestConsoleInChromium(t *testing.T) {
	ts, h, results := consoleEnv(t)
	proc := startChromium(t, ts.URL+"/harness?act=approve#token=console-token&session=console-a&prompt=what%20is%2017*23%3F")

	dom := stage(t, results, "interrupted")
	mustContain(t, "interrupted", dom,
		`<div class="msg user">what is 17*23?</div>`,
		`<details class="reasoning"><summary>Reasoning</summary><div>I should use calc.</div></details>`,
		`<div class="msg assistant">Let me compute.</div>`,
		`<div class="tool-card awaiting" data-call-id="c1"><div class="head"><span class="name">calc</span><span class="state">awaiting approval</span>`,
		"<pre class=\"args\">{\n  \"expression\": \"17*23\"\n}</pre>",
		`<button class="primary approve">Approve</button><button class="reject">Deny</button>`,
		`tokens 100 in · 20 out · $0.0012`,
		`<span id="status" class="s-interrupted">awaiting approval</span>`,
	)

	dom = stage(t, results, "done")
	mustContain(t, "done", dom,
		`<div class="tool-card" data-call-id="c1"><div class="head"><span class="name">calc</span><span class="state">done</span>`,
		`<pre class="result">391</pre>`,
		`<div class="msg assistant">17*23 = 391 &lt;b&gt;not bold&lt;/b&gt;</div>`,
		`tokens 230 in · 30 out · $0.0027`,
		`<span id="status" class="">finished: completed</span>`,
		`<span class="title">what is 17*23?</span>`,
		`<div class="plugin" data-name="calc"><b>calc</b> <span class="muted">tool · mcp</span>`,
		`<dt>tools</dt><dd>calc</dd>`, `<dt>timeout</dt><dd>10s</dd>`,
		`: completed (end_turn) · 130 in · 10 out · $0.0015 · <a class="raw-link"`,
	)
	if !regexp.MustCompile(`data-call-id="c1">.*?<span class="duration">\d+ ms</span>`).MatchString(dom) {
		t.Errorf("the card shows no duration:\n%s", dom)
	}
	if n := strings.Count(dom, `class="run-end"`); n != 2 {
		t.Errorf("%d run-end lines, want 2 (the interrupted run and its resume)", n)
	}
	if strings.Contains(dom, "<details class=\"reasoning\" open") {
		t.Errorf("reasoning is not folded")
	}

	dom = stage(t, results, "raw")
	raw := regexp.MustCompile(`(?s)<pre class="raw-events">(.*?)</pre>`).FindStringSubmatch(dom)
	if raw == nil {
		t.Fatalf("no raw events shown:\n%s", dom)
	}
	// The raw events are formatted (indented JSON, one value after another).
	var types []string
	dec := json.NewDecoder(strings.NewReader(strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`).Replace(raw[1])))
	for dec.More() {
		var e struct{ Type string }
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("raw events %q: %v", raw[1], err)
		}
		types = append(types, e.Type)
	}
	if types[0] != "run_started" || types[len(types)-1] != "run_finished" || !strings.Contains(strings.Join(types, " "), "tool_result") {
		t.Errorf("raw events of the resumed run: %v", types)
	}

	dom = stage(t, results, "search")
	mustContain(t, "search", dom, `<li class="muted">no session matches</li>`)
	stopChromium(proc)

	// The stored session holds both runs and the call ran once.
	runs, err := h.Store.Runs(context.Background(), "console-a")
	if err != nil || len(runs) != 2 || runs[1].Status != "completed" {
		t.Fatalf("stored runs %+v, %v", runs, err)
	}

	// Screenshots: a session awaiting approval, and the finished one with its raw events.
	b := startChromium(t, ts.URL+"/harness?act=click#token=console-token&session=console-b&prompt=what%20is%2017*23%3F")
	stage(t, results, "interrupted")
	stopChromium(b)
	dir := t.ArtifactDir() // kept with go test -artifacts -outputdir DIR
	for name, frag := range map[string]string{
		"console-approval.png": "#token=console-token&session=console-b",
		"console-finished.png": "#token=console-token&session=console-a&raw=" + runs[1].ID,
	} {
		shot := filepath.Join(dir, name)
		chromium(t, "--screenshot="+shot, "--window-size=1200,800", ts.URL+"/"+frag)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 1200 || cfg.Height != 800 {
			t.Fatalf("screenshot %s: %+v %v", name, cfg, err)
		}
		t.Logf("screenshot: %s", shot)
	}
}
