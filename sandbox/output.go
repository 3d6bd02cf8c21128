package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	extism "github.com/extism/go-sdk"
)

// A plugin author debugs with print statements and log calls, so what a call writes to
// stdout and stderr and logs through Extism's log functions is kept (bounded) and sent
// to Host.Notify as notifications/message when the call ends, whatever its outcome: the
// output of a call that trapped is often the only clue why. Extism log lines keep their
// level (info and above: see init); stdout and stderr are level debug, with logger "stdout" or "stderr". The wasi
// ABI's stdout is the call's result, so only its stderr is sent.
//
// All of it comes from code the host does not trust, so the sandbox bounds it before it
// is forwarded, as the run bounds what it keeps (loop/notify.go: 8 KiB a message, 1,000
// a run): a log line is cut at 8 KiB, a call keeps 100 Extism log lines and forwards
// 1,000 notifications (notify_progress, notify_logging_message, notify_tool_list_changed);
// the rest are counted and one warning says how many were dropped.
const (
	maxCallOutput  = 16 << 10 // per stream and call; the rest is counted, not kept
	maxCallLogs    = 100      // Extism log lines kept per call
	maxLogMessage  = 8 << 10  // per Extism log line; the rest is counted, not kept
	maxCallNotices = 1000     // notifications forwarded per call
)

func init() {
	// Extism filters log lines by a process-wide level that defaults to off. Info is the
	// lowest level that lets only the plugin's lines through: the Extism SDK logs its own
	// diagnostics at debug and trace, some while an instance is created, before its
	// logger can be attached, and those would go to the process's standard log. A plugin
	// that wants debug lines in its run sends them with notify_logging_message (sdk.Log).
	extism.SetLogLevel(extism.LogLevelInfo)
}

// callOutput is what one call of an instance wrote. An instance serves one call at a
// time, so it needs no more than a lock against a guest writing from a host callback.
type callOutput struct {
	mu             sync.Mutex
	stdout, stderr cappedBuffer
	logs           []logLine
	droppedLogs    int
}

type logLine struct {
	level, text string
}

func newCallOutput() *callOutput {
	return &callOutput{stdout: cappedBuffer{max: maxCallOutput}, stderr: cappedBuffer{max: maxCallOutput}}
}

type lockedWriter struct {
	o *callOutput
	b *cappedBuffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	return w.b.Write(p)
}

// log is the instance's Extism logger.
func (o *callOutput) log(level extism.LogLevel, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.logs) >= maxCallLogs {
		o.droppedLogs++
		return
	}
	o.logs = append(o.logs, logLine{level: mcpLevel(level), text: clipMessage(text)})
}

// clipMessage cuts a log line at maxLogMessage, saying how much was cut. A rune cut in
// two becomes U+FFFD when the line is encoded for the host.
func clipMessage(s string) string {
	if len(s) <= maxLogMessage {
		return s
	}
	return s[:maxLogMessage] + fmt.Sprintf("… (%s more)", formatSize(int64(len(s)-maxLogMessage)))
}

func mcpLevel(l extism.LogLevel) string {
	switch l {
	case extism.LogLevelWarn:
		return "warning"
	case extism.LogLevelError:
		return "error"
	}
	return "info"
}

// flush sends what the call wrote to the host and empties the buffers for the next call;
// droppedNotices is how many of the call's notifications went over maxCallNotices.
func (o *callOutput) flush(ctx context.Context, p *Plugin, droppedNotices int) {
	o.mu.Lock()
	logs, dropped := o.logs, o.droppedLogs
	out, errb := streamText(&o.stdout), streamText(&o.stderr)
	o.logs, o.droppedLogs = nil, 0
	o.stdout.reset()
	o.stderr.reset()
	o.mu.Unlock()
	for _, l := range logs {
		p.notifyLog(ctx, l.level, "", l.text)
	}
	if dropped > 0 {
		p.notifyLog(ctx, "warning", "", fmt.Sprintf("%d more log lines of this call were dropped", dropped))
	}
	if droppedNotices > 0 {
		p.notifyLog(ctx, "warning", "", fmt.Sprintf("%d more notifications of this call were dropped", droppedNotices))
	}
	if out != "" {
		p.notifyLog(ctx, "debug", "stdout", out)
	}
	if errb != "" {
		p.notifyLog(ctx, "debug", "stderr", errb)
	}
}

// streamText is a stream's kept text, valid UTF-8, with a note of what was cut.
func streamText(b *cappedBuffer) string {
	if b.total == 0 {
		return ""
	}
	s := strings.ToValidUTF8(strings.TrimRight(b.String(), "\n"), "\uFFFD")
	if b.total > int64(b.Len()) {
		s += fmt.Sprintf("… (%s more)", formatSize(b.total-int64(b.Len())))
	}
	return s
}

func (b *cappedBuffer) reset() {
	b.Buffer.Reset()
	b.total = 0
}

func (p *Plugin) notifyLog(ctx context.Context, level, logger, text string) {
	params, _ := json.Marshal(struct {
		Level  string `json:"level"`
		Logger string `json:"logger,omitempty"`
		Data   string `json:"data"`
	}{level, logger, text})
	p.host().Notify(ctx, p.name, "notifications/message", params)
}
