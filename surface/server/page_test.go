package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/store"
)

// clickHarness is a test page on the server's own origin that loads the live page in a
// frame (the page allows same-origin framing only), waits until it has loaded its
// sessions, then, per its query, does nothing, clicks Run, or presses Enter in the prompt
// box; it waits for the run to finish and the stored session to show, and posts the
// frame's DOM and prompt box to /harness-result (and copies them into its own #result).
const clickHarness = `<!doctype html><html><body style="margin:0;overflow:hidden">
<iframe id="f" style="border:0;width:100vw;height:100vh"></iframe><pre id="result" hidden></pre>
<script>
const q = new URLSearchParams(location.search), f = document.getElementById("f");
f.src = "/" + location.hash;
function report() {
  const d = f.contentDocument;
  const text = "prompt-box=" + JSON.stringify(d.getElementById("prompt").value) + "\n" + d.documentElement.outerHTML;
  document.getElementById("result").textContent = text;
  fetch("/harness-result", { method: "POST", body: text });
}
function waitFor(cond, then) { const t = () => cond() ? then() : setTimeout(t, 50); t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id);
  waitFor(() => $("sessions").children.length > 0, () => setTimeout(() => {
    const act = q.get("act");
    if (act === "none") return report();
    if (act === "click") $("send").click();
    if (act === "enter") $("prompt").dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    // The run has ended and the page has redrawn the session from the store.
    waitFor(() => Number(d.body.dataset.runs || 0) >= 1, report);
  }, 1000));
};
</script></body></html>`

// pageEnv serves the live page and, on the same origin, clickHarness at /harness; what
// the harness posts to /harness-result arrives on results.
func pageEnv(t *testing.T) (*testEnv, <-chan string) {
	results := make(chan string, 4)
	wrap := func(srv http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /harness", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(clickHarness))
		})
		mux.HandleFunc("GET /trace-harness", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(traceHarness)) // trace_test.go
		})
		mux.HandleFunc("POST /harness-result", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			results <- string(b)
		})
		mux.Handle("/", srv)
		return mux
	}
	// A SQLite store: the console's memory panel needs one that keeps memories.
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "page.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newTestEnv(t, envOptions{token: "page-token", wrap: wrap, store: st}, addTurns...)
	e.run(t, runBody("earlier", "r0", "what is 2+40?")) // a session to list
	return e, results
}

// runHarness opens url (the harness) in headless Chromium, waits for the harness's
// result and closes its tab.
func runHarness(t *testing.T, results <-chan string, url string) string {
	t.Helper()
	tb := startChromium(t, url)
	defer stopChromium(tb)
	select {
	case res := <-results:
		return res
	case <-time.After(90 * time.Second): // a hang guard, not a speed assertion
		t.Fatalf("the harness reported nothing")
		return ""
	}
}

func sessionEntries(t *testing.T, e *testEnv, id string) int {
	t.Helper()
	entries, err := e.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Hole 3: a prompt in the page's URL only fills the prompt box. Any page can link to
// /#prompt=…, and the page holds the saved token, so sending it by itself would run a
// stranger's prompt with the user's rights. No run may start until the user acts.
func TestHole3PromptFromURLIsNotSent(t *testing.T) {
	e, results := pageEnv(t)
	res := runHarness(t, results, e.ts.URL+"/harness?act=none#token=page-token&session=page-s0&prompt=what%20is%202%2B40%3F")
	if !strings.HasPrefix(res, `prompt-box="what is 2+40?"`) {
		t.Fatalf("prompt box does not hold the URL's prompt:\n%s", res)
	}
	if !strings.Contains(res, `<span id="status">idle</span>`) || !strings.Contains(res, `<span id="run">-</span>`) {
		t.Fatalf("the page started a run by itself:\n%s", res)
	}
	if n := sessionEntries(t, e, "page-s0"); n != 0 {
		t.Fatalf("the server ran the URL's prompt: session page-s0 has %d entries", n)
	}
}

// TestConsoleRunsOnClickAndOnEnter loads the console with a token and a prompt in
// its fragment and clicks Run (then, on another session, presses Enter); the DOM then
// shows the conversation redrawn from the store: the prompt, the answer, the tool call
// as a card with its result.
func TestConsoleRunsOnClickAndOnEnter(t *testing.T) {
	e, results := pageEnv(t)
	for _, act := range []string{"click", "enter"} {
		session := "page-" + act
		dom := runHarness(t, results, e.ts.URL+"/harness?act="+act+"#token=page-token&session="+session+"&prompt=what%20is%202%2B40%3F")
		for _, want := range []string{
			`<b id="thread">` + session + `</b>`,
			`<span id="status" class="">finished: completed</span>`,
			`<div class="msg user">what is 2+40?</div>`,
			`<div class="msg assistant">Adding.</div>`,
			`<span class="name">add</span><span class="state">done</span>`,
			`<pre class="result">42</pre>`,
			`<div class="msg assistant">The sum is 42.</div>`,
			`<li class="session" data-id="earlier"><span class="title">what is 2+40?</span><span class="meta">earlier · completed · 1 run · $0.0000</span></li>`,
			`: completed (end_turn)`,
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("%s: page DOM lacks %s", act, want)
			}
		}
		if t.Failed() {
			t.Fatalf("DOM:\n%s", dom)
		}
		if n := sessionEntries(t, e, session); n == 0 {
			t.Fatalf("%s: the server stored nothing for %s", act, session)
		}
	}
}

// A foreign page may not frame the live page (clickjacking the Run button).
func TestPageRefusesForeignFraming(t *testing.T) {
	e := newTestEnv(t, envOptions{})
	resp := e.do(t, "GET", "/", "", "")
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self'") {
		t.Fatalf("CSP %q lacks frame-ancestors 'self'", csp)
	}
	if xfo := resp.Header.Get("X-Frame-Options"); xfo != "SAMEORIGIN" {
		t.Fatalf("X-Frame-Options %q", xfo)
	}
}
