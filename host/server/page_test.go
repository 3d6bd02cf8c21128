package server

import (
	"bytes"
	"context"
	"image/png"
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

// TestLivePageInChromium loads the page with a token and a prompt in its fragment, which
// makes it start a run; Chromium's DOM then shows the streamed events, the answer and the
// stored session, and a screenshot is kept as an artifact.
func TestLivePageInChromium(t *testing.T) {
	e := newTestEnv(t, envOptions{token: "page-token"}, addTurns...)
	e.run(t, runBody("earlier", "r0", "what is 2+40?")) // a session to list
	url := e.ts.URL + "/#token=page-token&session=page-s1&prompt=what%20is%202%2B40%3F"

	dom := string(chromium(t, "--dump-dom", url))
	for _, want := range []string{
		`<span id="thread">page-s1</span>`,
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
			t.Errorf("page DOM lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s", dom)
	}

	dir := t.TempDir()
	if art := os.Getenv("AGENTHOST_ARTIFACTS"); art != "" {
		dir = art
	}
	shot := filepath.Join(dir, "serve-page.png")
	chromium(t, "--screenshot="+shot, "--window-size=1200,800", e.ts.URL+"/#token=page-token&session=page-s2&prompt=what%20is%202%2B40%3F")
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
