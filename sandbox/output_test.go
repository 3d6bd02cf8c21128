package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestPluginOutputAndExtismLogsReachTheHost(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("chatty"), Host: h})
	res, err := p.CallTool(context.Background(), "chatty", []byte(`{"text":"hi"}`))
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
	p.CallTool(context.Background(), "chatty", []byte(`{"text":"again"}`))
	if len(h.notified) != len(want) {
		t.Fatalf("second call reported %d lines: %v", len(h.notified), h.notified)
	}
}

func TestTrappedCallStillReportsItsOutput(t *testing.T) {
	h := &testHost{}
	p := load(t, newTestRuntime(t), Config{Name: "g", Wasm: fixtures.guest, Tools: extismTool("chatty"), Host: h})
	res, err := p.CallTool(context.Background(), "chatty", []byte(`{"text":"trap"}`))
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
	if _, err := p.CallTool(context.Background(), "chatty", []byte(`{"text":"flood"}`)); err != nil {
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
	res, err := p.CallTool(context.Background(), "shout", []byte(`{"text":"warn"}`))
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
