package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPluginOutputAndExtismLogsReachTheHost(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("chatty"), Host: h})
	res, err := p.InvokeTool(context.Background(), "chatty", []byte(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, res, false, "said it all")
	want := []string{
		`g notifications/message {"level":"info","data":"an info line"}`,
		`g notifications/message {"level":"warning","data":"a warning"}`,
		`g notifications/message {"level":"debug","logger":"stdout","data":"to stdout"}`,
		`g notifications/message {"level":"debug","logger":"stderr","data":"to stderr"}`,
	}
	if strings.Join(h.notified, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notified\n%s\nwant\n%s", strings.Join(h.notified, "\n"), strings.Join(want, "\n"))
	}

	// Extism's debug lines are not forwarded (output.go): the guest's log_debug is not here.
	// A second call on the same (warm) instance reports only its own output.
	h.notified = nil
	p.InvokeTool(context.Background(), "chatty", []byte(`{"text":"again"}`))
	if len(h.notified) != len(want) {
		t.Fatalf("second call reported %d lines: %v", len(h.notified), h.notified)
	}
}

func TestTrappedCallStillReportsItsOutput(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("chatty"), Host: h})
	res, err := p.InvokeTool(context.Background(), "chatty", []byte(`{"text":"trap"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("a trap returned %q", res.Text())
	}
	got := strings.Join(h.notified, "\n")
	if !strings.Contains(got, `"logger":"stdout","data":"to stdout"`) || !strings.Contains(got, "chatty crashed") {
		t.Fatalf("a trapped call's output was lost:\n%s", got)
	}
}

func TestFloodedStdoutIsCutAndCounted(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("chatty"), Host: h})
	if _, err := p.InvokeTool(context.Background(), "chatty", []byte(`{"text":"flood"}`)); err != nil {
		t.Fatal(err)
	}
	var stdout string
	for _, n := range h.notified {
		if strings.Contains(n, `"logger":"stdout"`) {
			stdout = n
		}
	}
	if len(stdout) > maxCallOutput+200 || !strings.HasSuffix(stdout, `… (86026 bytes more)"}`) {
		t.Fatalf("stdout report: %d bytes, ends %q", len(stdout), stdout[max(0, len(stdout)-40):])
	}
}

func TestWASIStderrIsReportedAndStdoutIsTheResult(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "w", Wasm: fixtures.wasicmd, Host: h,
		Tools: []ToolDecl{{Name: "shout"}}, Permissions: Permissions{Timeout: 5 * time.Second}})
	res, err := p.InvokeTool(context.Background(), "shout", []byte(`{"text":"warn"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.HasSuffix(res.Text(), "WARN") {
		t.Fatalf("result %q", res.Text())
	}
	want := `w notifications/message {"level":"debug","logger":"stderr","data":"warning: shouting"}`
	if len(h.notified) != 1 || h.notified[0] != want {
		t.Fatalf("notified %v", h.notified)
	}
}

func TestFileErrorsNameTheAllowedPaths(t *testing.T) {
	dir := t.TempDir()
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("read_file"),
		Permissions: Permissions{AllowedPaths: map[string]string{"ro:" + dir: "/data"}}})
	res := callTool(t, p, "read_file", `{"text":"/etc/passwd"}`)
	if !res.IsError || !strings.HasSuffix(res.Text(), `(plugin "g" reaches only its allowed_paths: `+dir+` at /data (read-only))`) {
		t.Fatalf("result %q", res.Text())
	}
	bare := load(t, r, Config{Name: "bare", Wasm: fixtures.guest, Tools: extismTool("read_file")})
	res = callTool(t, bare, "read_file", `{"text":"/data/x"}`)
	if !res.IsError || !strings.HasSuffix(res.Text(), `(plugin "bare" has no allowed_paths: it can reach no file)`) {
		t.Fatalf("result %q", res.Text())
	}
	// Other errors are left as they are.
	res = callTool(t, bare, "read_file", `{}`)
	if strings.Contains(res.Text(), "allowed_paths") {
		t.Fatalf("a non-file error got the note: %q", res.Text())
	}
}

// A plugin's own error message is output it chose: a 10 MiB error_set reaches the
// caller cut at max_output, with what was cut. The call's timeout is generous: writing
// 10 MiB under the race detector passed the default 5 s at load 10-14 on 2 cores (the
// timeout is not what this proves).
func TestHostileTenMiBErrorIsCutAtMaxOutput(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("loud_error"),
		Permissions: Permissions{MaxOutput: 64 << 10, Timeout: 2 * time.Minute}})
	res := callTool(t, p, "loud_error", fmt.Sprintf(`{"text":"%d"}`, 10<<20))
	want := `plugin "g": loud_error: ` + strings.Repeat("e", 64<<10) + `… (error message of 10 MiB cut at max_output 64 KiB)`
	if !res.IsError || res.Text() != want {
		t.Fatalf("got isError=%v, %d bytes ending %q", res.IsError, len(res.Text()), res.Text()[max(0, len(res.Text())-80):])
	}
	_, err := p.CallExport(context.Background(), "loud_error", []byte(fmt.Sprint(10<<20)))
	if err == nil || err.Error() != want {
		t.Fatalf("CallExport: %d bytes", len(fmt.Sprint(err)))
	}
}

// 10,000 log lines and 5,000 notifications from one call (100 and 5 times the bounds)
// reach the host as at most maxCallLogs lines and maxCallNotices notifications, each line
// cut at 8 KiB, and a warning for each kind saying how many were dropped. (It was 100,000
// lines: a minute of a busy machine under -race for the same rule.)
func TestHostileLogFloodIsBoundedPerCall(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("log_flood"), Host: h,
		Permissions: Permissions{Timeout: time.Minute}}) // the guest stores each line byte by byte
	wantResult(t, callTool(t, p, "log_flood", `{"text":"10000 5000"}`), false, "logged")
	var lines, notices int
	var long string
	for _, n := range h.notified {
		switch {
		case strings.Contains(n, `"data":"line `) || strings.Contains(n, `"data":"LLL`):
			lines++
			if strings.Contains(n, "LLL") {
				long = n
			}
		case strings.Contains(n, `"data":"notice `):
			notices++
		}
	}
	if lines != maxCallLogs || notices != maxCallNotices {
		t.Fatalf("forwarded %d log lines and %d notifications, want %d and %d", lines, notices, maxCallLogs, maxCallNotices)
	}
	if !strings.Contains(long, `"data":"`+strings.Repeat("L", maxLogMessage)+`… (92 KiB more)"`) {
		t.Fatalf("the 100 KiB line was forwarded as %d bytes", len(long))
	}
	got := strings.Join(h.notified[len(h.notified)-2:], "\n")
	for _, w := range []string{"9901 more log lines of this call were dropped", "4000 more notifications of this call were dropped"} {
		if !strings.Contains(got, w) {
			t.Fatalf("no warning %q in\n%s", w, got)
		}
	}
}

// stream_result forwards a piece of the call's result as Host.Notify(MethodResultDelta,
// {"text"}): invalid UTF-8 becomes U+FFFD, an empty piece is not forwarded (it counts,
// like any notify_* call), and pieces count against the call's bound on notifications.
func TestStreamResultIsValidUTF8AndBoundedPerCall(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("stream_hostile"), Host: h,
		Permissions: Permissions{Timeout: time.Minute}})
	wantResult(t, callTool(t, p, "stream_hostile", `{"text":"go"}`), false, "streamed")
	var deltas []string
	for _, n := range h.notified {
		if strings.HasPrefix(n, "g "+MethodResultDelta+" ") {
			deltas = append(deltas, strings.TrimPrefix(n, "g "+MethodResultDelta+" "))
		}
	}
	if len(deltas) != maxCallNotices-1 || deltas[0] != `{"text":"\ufffd ok"}` || deltas[1] != `{"text":"piece"}` {
		t.Fatalf("%d deltas, first %q", len(deltas), deltas[:min(2, len(deltas))])
	}
}
