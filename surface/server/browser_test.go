package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The package's console tests share one headless Chromium (Debian's package, installed by
// scripts/deps.d/serve.sh), started on first use and stopped by TestMain: a browser
// started per page cost about 2.7 CPU-seconds, and the package opened some thirty. Each
// page gets a tab in a browser context of its own (cookies, storage and cache apart, as
// in a fresh profile), driven over the DevTools protocol on a pipe (no port to collide).

// browserFlags keep the browser offline and quiet. Popups are allowed for every page: the
// connect test's harness clicks Connect from script, which a popup blocker would stop,
// and no test relies on a popup being blocked.
var browserFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-popup-blocking", "--remote-debugging-pipe"}

var shared struct {
	once sync.Once
	b    *browser
	err  error
}

// sharedBrowser starts the package's browser on first use.
func sharedBrowser(t *testing.T) *browser {
	t.Helper()
	shared.once.Do(func() { shared.b, shared.err = startBrowser() })
	if shared.err != nil {
		t.Fatalf("chromium: %v", shared.err)
	}
	return shared.b
}

// stopSharedBrowser kills the browser, if one was started, and its helpers.
func stopSharedBrowser() {
	if shared.b != nil {
		shared.b.stop()
	}
}

// browser is a running Chromium and its DevTools connection: commands are NUL-terminated
// JSON written to its fd 3, replies and events read from its fd 4.
type browser struct {
	cmd     *exec.Cmd
	profile string
	in      *os.File

	mu      sync.Mutex
	next    int64
	calls   map[int64]chan cdpMsg
	waits   map[string]chan struct{} // sessionId + " " + event method
	dead    chan struct{}
	readErr error
}

type cdpMsg struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    any             `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func startBrowser() (*browser, error) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		return nil, fmt.Errorf("chromium is not installed (make deps installs it): %w", err)
	}
	profile, err := os.MkdirTemp("", "agenthost-chromium-")
	if err != nil {
		return nil, err
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(browserFlags, "--user-data-dir="+profile, "about:blank")...)
	cmd.ExtraFiles = []*os.File{cmdR, outW}               // fd 3: what it reads; fd 4: what it writes
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers go with it
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cmdR.Close()
	outW.Close()
	b := &browser{cmd: cmd, profile: profile, in: cmdW, calls: map[int64]chan cdpMsg{},
		waits: map[string]chan struct{}{}, dead: make(chan struct{})}
	go b.read(bufio.NewReaderSize(outR, 1<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := b.call(ctx, "", "Browser.getVersion", nil, nil); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// read hands each reply to its caller and each awaited event to its waiter.
func (b *browser) read(r *bufio.Reader) {
	var err error
	for {
		var line []byte
		if line, err = r.ReadBytes(0); err != nil {
			break
		}
		var m cdpMsg
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if ch, ok := b.calls[m.ID]; ok && m.ID != 0 {
			delete(b.calls, m.ID)
			ch <- m
		} else if ch, ok := b.waits[m.SessionID+" "+m.Method]; ok {
			delete(b.waits, m.SessionID+" "+m.Method)
			close(ch)
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.readErr = fmt.Errorf("the browser's DevTools pipe closed: %w", err)
	b.mu.Unlock()
	close(b.dead)
}

// call sends method with params (to the page of session, or to the browser when it is
// "") and decodes the reply's result into result, if not nil.
func (b *browser) call(ctx context.Context, session, method string, params, result any) error {
	b.mu.Lock()
	b.next++
	id, ch := b.next, make(chan cdpMsg, 1)
	b.calls[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMsg{ID: id, Method: method, SessionID: session, Params: params})
	if err == nil {
		_, err = b.in.Write(append(msg, 0))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-b.dead:
		return fmt.Errorf("%s: %w", method, b.readErr)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// await returns a channel closed when the page of session next sends event method.
func (b *browser) await(session, method string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan struct{})
	b.waits[session+" "+method] = ch
	return ch
}

// wait waits for ch to close, the browser to end, or ctx to be done (then it says what).
func (b *browser) wait(ctx context.Context, ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-b.dead:
		return b.readErr
	case <-ctx.Done():
		return errors.New(what)
	}
}

func (b *browser) stop() {
	_ = b.in.Close()
	if b.cmd.ProcessState == nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		_ = b.cmd.Wait()
	}
	_ = os.RemoveAll(b.profile) // best-effort: helpers may write to it a moment longer
}

// tab is a page in a browser context of its own.
type tab struct {
	b       *browser
	context string // the browser context's id
	session string // the page's DevTools session
	once    sync.Once
}

// openTab opens a blank page of width×height in a new browser context; close removes
// the context and every page in it (the page's popups too).
func (b *browser) openTab(ctx context.Context, width, height int) (*tab, error) {
	var bc struct{ BrowserContextID string }
	if err := b.call(ctx, "", "Target.createBrowserContext", map[string]any{"disposeOnDetach": true}, &bc); err != nil {
		return nil, err
	}
	tb := &tab{b: b, context: bc.BrowserContextID}
	var target struct{ TargetID string }
	err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": tb.context,
		"width": width, "height": height}, &target)
	var attached struct{ SessionID string }
	if err == nil {
		err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	}
	tb.session = attached.SessionID
	if err == nil {
		err = tb.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height,
			"deviceScaleFactor": 1, "mobile": false})
	}
	if err == nil {
		err = tb.call(ctx, "Page.enable", nil)
	}
	if err != nil {
		tb.close()
		return nil, err
	}
	return tb, nil
}

func (tb *tab) call(ctx context.Context, method string, params any) error {
	return tb.b.call(ctx, tb.session, method, params, nil)
}

func (tb *tab) navigate(ctx context.Context, url string) error {
	var nav struct{ ErrorText string }
	if err := tb.b.call(ctx, tb.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, nav.ErrorText)
	}
	return nil
}

// close disposes of the tab's browser context: its pages stop, their scripts with them.
func (tb *tab) close() {
	tb.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = tb.b.call(ctx, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": tb.context}, nil)
	})
}

// startChromium opens url in a tab of the shared browser (1200×800), in real time (no
// virtual time budget: a run streamed by a loaded machine may take long); the tab is
// closed when the test ends, or by stopChromium. Browser flags are the package's
// (browserFlags): a test asking for another one fails.
func startChromium(t *testing.T, url string, flags ...string) *tab {
	t.Helper()
	for _, f := range flags {
		if !slices.Contains(browserFlags, f) {
			t.Fatalf("the shared browser runs without %s: add it to browserFlags if every page may have it", f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tb, err := sharedBrowser(t).openTab(ctx, 1200, 800)
	if err == nil {
		err = tb.navigate(ctx, url)
	}
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	t.Cleanup(tb.close)
	return tb
}

// stopChromium closes the tab: its page and scripts stop, as when a browser is killed.
func stopChromium(tb *tab) { tb.close() }

// chromium saves a screenshot of a page, as `chromium --screenshot=FILE
// --window-size=W,H URL` did: in a tab of that size, after the page has loaded and run
// 15 s of virtual time (virtual time waits while a fetch is pending), as its headless
// shell did.
func chromium(t *testing.T, args ...string) {
	t.Helper()
	var shot, url string
	width, height := 0, 0
	for _, a := range args {
		switch {
		case len(a) > 13 && a[:13] == "--screenshot=":
			shot = a[13:]
		case len(a) > 14 && a[:14] == "--window-size=":
			if _, err := fmt.Sscanf(a[14:], "%d,%d", &width, &height); err != nil {
				t.Fatalf("chromium %s: %v", a, err)
			}
		case len(a) > 0 && a[0] != '-':
			url = a
		default:
			t.Fatalf("chromium: flag %s is not one the screenshot helper knows", a)
		}
	}
	if shot == "" || url == "" || width == 0 {
		t.Fatalf("chromium %v: want --screenshot=, --window-size= and a URL", args)
	}
	if err := screenshot(sharedBrowser(t), shot, width, height, url); err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
}

func screenshot(b *browser, shot string, width, height int, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tb, err := b.openTab(ctx, width, height)
	if err != nil {
		return err
	}
	defer tb.close()
	loaded := b.await(tb.session, "Page.loadEventFired")
	if err := tb.navigate(ctx, url); err != nil {
		return err
	}
	if err := b.wait(ctx, loaded, "the page did not load"); err != nil {
		return err
	}
	expired := b.await(tb.session, "Emulation.virtualTimeBudgetExpired")
	err = tb.call(ctx, "Emulation.setVirtualTimePolicy", map[string]any{"policy": "pauseIfNetworkFetchesPending", "budget": 15000})
	if err != nil {
		return err
	}
	if err := b.wait(ctx, expired, "the page's virtual time budget did not run out"); err != nil {
		return err
	}
	var png struct{ Data string }
	if err := b.call(ctx, tb.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &png); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(png.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(shot, raw, 0o644)
}
