package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// jsonLines writes each event as one JSON object per line (docs/loop.md#events).
func jsonLines(w io.Writer) func(loop.Event) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(e loop.Event) { _ = enc.Encode(e) }
}

// transcript renders events for a person: reasoning dimmed, tool calls with their
// arguments, a result preview and the duration, a spinner while the model works, and
// the final answer. Colours and the spinner only on a terminal, and no colours when
// NO_COLOR is set to anything (https://no-color.org): the spinner stays, it is not colour.
type transcript struct {
	out, errw io.Writer
	tty       bool // the spinner runs
	color     bool // styles are written
	logLevel  int  // plugin_log below this rank is not shown (parseLogLevel)

	mu     sync.Mutex
	spin   chan struct{} // closed to stop the spinner
	spinWG sync.WaitGroup

	// errors said so far (errorLine): the message of the retried failure being repeated,
	// the last error as "kind: message", and the last error message printed in full.
	retried, lastErr, saidMsg string
}

// It writes its colours and spinner itself, past the root's safeWriter, and neutralises
// every event's text instead (event, terminal.go).
func newTranscript(out, errw io.Writer, tty bool, logLevel int) *transcript {
	return &transcript{out: underlying(out), errw: underlying(errw), tty: tty, color: tty && os.Getenv("NO_COLOR") == "", logLevel: logLevel}
}

// parseLogLevel reads --log-level: a plugin_log level (docs/loop.md#events), shown with
// every level above it, or "off".
func parseLogLevel(s string) (int, error) {
	if s == "off" {
		return len(loop.LogLevels), nil
	}
	if r := loop.LogLevelRank(s); r >= 0 {
		return r, nil
	}
	return 0, fmt.Errorf("--log-level %q: want one of %s or off", s, strings.Join(loop.LogLevels, ", "))
}

// report renders a plugin's plugin_log or progress as one line, or "" when its level is
// below min (progress counts as info). data is an event's (a pointer) or what
// host.Options.OnReport is given (a value).
func report(data any, min int, style func(code, s string) string) string {
	switch d := data.(type) {
	case loop.PluginLogData:
		data = &d
	case loop.ProgressData:
		data = &d
	}
	switch d := data.(type) {
	case *loop.PluginLogData:
		r := loop.LogLevelRank(d.Level)
		if r < min {
			return ""
		}
		line := fmt.Sprintf("[%s] %s: %s", d.Plugin, d.Level, d.Message)
		switch {
		case r >= loop.LogLevelRank("error"):
			return style(red, line)
		case r <= loop.LogLevelRank("debug"):
			return style(dim, line)
		}
		return line
	case *loop.ProgressData:
		if loop.LogLevelRank("info") < min {
			return ""
		}
		done := fmt.Sprint(d.Progress)
		if d.Total > 0 {
			done += "/" + fmt.Sprint(d.Total)
		}
		return style(dim, strings.TrimSpace(fmt.Sprintf("[%s] progress %s %s", d.Plugin, done, d.Message)))
	}
	return ""
}

const (
	dim   = "\x1b[2m"
	bold  = "\x1b[1m"
	red   = "\x1b[31m"
	cyan  = "\x1b[36m"
	reset = "\x1b[0m"
)

func (t *transcript) style(code, s string) string {
	if !t.color {
		return s
	}
	return code + s + reset
}

func (t *transcript) event(e loop.Event) {
	e.Path, e.Data = termText(e.Path), cleanValue(e.Data)
	if e.Path != "" {
		t.nested(e)
		return
	}
	switch d := e.Data.(type) {
	case *loop.StatusData:
		if d.State == loop.StateModelRunning {
			t.startSpinner("thinking")
		} else {
			t.stop()
		}
	case *loop.ModelDeltaData:
		// the transcript prints whole messages; deltas only keep the spinner going
	case *loop.TextData:
		t.stop()
		if e.Type == loop.EventReasoning {
			fmt.Fprintln(t.out, t.style(dim, "∴ "+strings.TrimSpace(d.Text)))
		} else {
			fmt.Fprintln(t.out, strings.TrimSpace(d.Text))
		}
	case *loop.ToolCallData:
		t.stop()
		if e.Type == loop.EventApproval {
			fmt.Fprintf(t.out, "%s %s %s%s\n", t.style(bold, "approval needed:"), d.Name, t.callID(d.ID), d.Arguments)
			return
		}
		fmt.Fprintf(t.out, "%s %s %s%s\n", t.style(cyan, "→"), t.style(bold, d.Name), t.callID(d.ID), d.Arguments)
	case *loop.ToolResultData:
		mark := t.style(cyan, "←")
		if d.IsError {
			mark = t.style(red, "✗")
		}
		took := fmt.Sprintf("(%d ms)", d.DurationMS)
		if d.Cached {
			took = fmt.Sprintf("(cached, %s old)", (time.Duration(d.CacheAgeMS) * time.Millisecond).Round(time.Second))
		}
		fmt.Fprintf(t.out, "%s %s %s%s %s\n", mark, d.Name, t.callID(d.ID), preview(d.Content, 160), t.style(dim, took))
	case *loop.ErrorData:
		t.stop()
		t.errorLine(d)
	case *loop.GuardrailData:
		fmt.Fprintln(t.out, t.style(dim, fmt.Sprintf("guardrail %s %s at %s: %s", d.Name, d.Action, d.Stage, d.Reason)))
	case *loop.HookData:
		fmt.Fprintln(t.out, t.style(dim, fmt.Sprintf("hook %s (%s) %s: %s", d.Name, d.Point, d.Verdict, d.Reason)))
	case *loop.PluginLogData, *loop.ProgressData:
		if line := report(d, t.logLevel, t.style); line != "" {
			t.stop()
			fmt.Fprintln(t.errw, line)
		}
	case *loop.FinalData:
		t.stop()
		fmt.Fprintln(t.out, t.style(bold, d.Text))
	case *loop.RunFinishedData:
		t.stop()
		if d.Status != loop.StatusCompleted {
			fmt.Fprintln(t.errw, t.style(dim, fmt.Sprintf("run %s (%s)", d.Status, d.Reason)))
		}
	}
}

// nested prints what a nested run (ask_NAME, a plan step's sub-run) does, indented
// under the call that started it and named by its path: its tool calls, results,
// approvals and answer. Its status changes, deltas and bookkeeping are left out.
func (t *transcript) nested(e loop.Event) {
	who := t.style(dim, "  ["+e.Path+"]")
	switch d := e.Data.(type) {
	case *loop.ToolCallData:
		t.stop()
		if e.Type == loop.EventApproval {
			fmt.Fprintf(t.out, "%s %s %s %s\n", who, t.style(bold, "approval needed:"), d.Name, d.Arguments)
			return
		}
		fmt.Fprintf(t.out, "%s %s %s %s%s\n", who, t.style(cyan, "→"), t.style(bold, d.Name), t.callID(d.ID), d.Arguments)
	case *loop.ToolResultData:
		t.stop()
		mark := t.style(cyan, "←")
		if d.IsError {
			mark = t.style(red, "✗")
		}
		fmt.Fprintf(t.out, "%s %s %s %s%s\n", who, mark, d.Name, t.callID(d.ID), preview(d.Content, 160))
	case *loop.FinalData:
		t.stop()
		fmt.Fprintf(t.out, "%s %s\n", who, preview(d.Text, 160))
	case *loop.PluginLogData, *loop.ProgressData:
		if line := report(d, t.logLevel, t.style); line != "" {
			t.stop()
			fmt.Fprintln(t.errw, line)
		}
	}
}

// callID shows which call a → starts and a ← answers, as `sessions show` names them
// ("[c1] "): with calls in parallel, or one tool called twice, results come in an order
// that alone does not say.
func (t *transcript) callID(id string) string {
	if id == "" {
		return ""
	}
	return t.style(dim, "["+id+"]") + " "
}

func (t *transcript) startSpinner(label string) {
	if !t.tty {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spin != nil {
		return
	}
	t.spin = make(chan struct{})
	t.spinWG.Add(1)
	go func(stop chan struct{}) {
		defer t.spinWG.Done()
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		tick := time.NewTicker(80 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(t.errw, "\r%s %s", frames[i%len(frames)], label)
			select {
			case <-stop:
				fmt.Fprint(t.errw, "\r\x1b[K")
				return
			case <-tick.C:
			}
		}
	}(t.spin)
}

// stop ends the spinner, if one runs.
func (t *transcript) stop() {
	t.mu.Lock()
	s := t.spin
	t.spin = nil
	t.mu.Unlock()
	if s != nil {
		close(s)
		t.spinWG.Wait()
	}
}

// preview shortens text to one line of at most n runes.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
