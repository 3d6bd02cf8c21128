package server

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium runs headless Chromium (Debian's package, installed by scripts/deps.d/serve.sh)
// with args added to the flags that keep it offline and quiet.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make deps installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=15000"}
	cmd := exec.CommandContext(ctx, bin, append(flags, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

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
    // The run has ended and the page has shown the stored session, run record included.
    const stored = () => [...d.querySelectorAll("li.entry")].some((li) => / \((end_turn|error)\)$/.test(li.textContent));
    waitFor(() => /^(finished|error)/.test($("status").textContent) && stored(), report);
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
		mux.HandleFunc("POST /harness-result", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			results <- string(b)
		})
		mux.Handle("/", srv)
		return mux
	}
	e := newTestEnv(t, envOptions{token: "page-token", wrap: wrap}, addTurns...)
	e.run(t, runBody("earlier", "r0", "what is 2+40?")) // a session to list
	return e, results
}

// runHarness opens url (the harness) in headless Chromium, in real time (no virtual
// time budget: a run streamed by a loaded machine may take long), waits for the
// harness's result and closes the browser.
func runHarness(t *testing.T, results <-chan string, url string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make deps installs it): %v", err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	select {
	case res := <-results:
		return res
	case <-time.After(90 * time.Second): // a hang guard, not a speed assertion
		t.Fatalf("the harness reported nothing; chromium said:\n%s", stderr.String())
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

// TestLivePageInChromium loads the page with a token and a prompt in its fragment and
// clicks Run (then, on another session, presses Enter); Chromium's DOM then shows the
// streamed events, the answer and the stored session, and a screenshot is kept as an
// artifact.
func TestLivePageInChromium(t *testing.T) {
	e, results := pageEnv(t)
	for _, act := range []string{"click", "enter"} {
		session := "page-" + act
		dom := runHarness(t, results, e.ts.URL+"/harness?act="+act+"#token=page-token&session="+session+"&prompt=what%20is%202%2B40%3F")
		for _, want := range []string{
			`<span id="thread">` + session + `</span>`,
			`<span id="status">finished: success</span>`,
			`<div id="answer">Adding.` + "\n" + `The sum is 42.</div>`,
			`<div class="t-TOOL_CALL_START">TOOL_CALL_START add</div>`,
			`<div class="t-TOOL_CALL_RESULT">TOOL_CALL_RESULT 42</div>`,
			`<div class="t-RUN_FINISHED">RUN_FINISHED success completed</div>`,
			`<li class="session" data-id="earlier">earlier  (1 runs)</li>`,
			`<li class="entry">tool: 42</li>`,
			`: completed (end_turn)</li>`,
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

	dir := t.TempDir()
	if art := os.Getenv("AGENTHOST_ARTIFACTS"); art != "" {
		dir = art
	}
	shot := filepath.Join(dir, "serve-page.png")
	chromium(t, "--screenshot="+shot, "--window-size=1200,800", e.ts.URL+"/harness?act=click#token=page-token&session=page-s2&prompt=what%20is%202%2B40%3F")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if cfg.Width != 1200 || cfg.Height != 800 {
		t.Fatalf("screenshot is %dx%d, want 1200x800", cfg.Width, cfg.Height)
	}
	t.Logf("screenshot: %s", shot)
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
