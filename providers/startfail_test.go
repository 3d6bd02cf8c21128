package providers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// TestHole12_AdapterThatExitsAtStartShowsExitCodeAndStderr: an adapter that dies
// before the handshake is reported with its exit status and the end of its stderr,
// not only with go-plugin's "plugin exited before we could connect".
func TestHole12_AdapterThatExitsAtStartShowsExitCodeAndStderr(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "broken-adapter")
	var body strings.Builder
	body.WriteString("#!/bin/sh\n")
	for i := 1; i <= 30; i++ { // more than the 20 lines quoted
		fmt.Fprintf(&body, "echo 'line %d' >&2\n", i)
	}
	body.WriteString("echo 'fatal: OPENAI_API_KEY is not set' >&2\nexit 3\n")
	if err := os.WriteFile(script, []byte(body.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "broken", Command: script, Stderr: &seen})
	if err == nil {
		t.Fatal("Start succeeded")
	}
	msg := err.Error()
	wantPrefix := fmt.Sprintf(`start provider "broken": adapter %s exited with status 3; its stderr ended with:`, script)
	if !strings.HasPrefix(msg, wantPrefix) {
		t.Fatalf("error:\n%s\nwant prefix:\n%s", msg, wantPrefix)
	}
	for _, want := range []string{"\n  line 12\n", "\n  line 30\n", "\n  fatal: OPENAI_API_KEY is not set (", "(Unrecognized remote plugin message:)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 11\n") {
		t.Errorf("error quotes more than the last 20 lines:\n%s", msg)
	}
	// The operator's own stderr sink still got everything.
	if !strings.Contains(seen.String(), "line 1\n") {
		t.Errorf("Stderr sink lost lines: %q", seen.String())
	}
}

// An adapter killed by a signal at start says so, and one that printed nothing says that.
func TestHole12_AdapterKilledAtStartSaysBySignal(t *testing.T) {
	script := filepath.Join(t.TempDir(), "self-kill")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nkill -9 $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "k", Command: script})
	want := fmt.Sprintf(`start provider "k": adapter %s ended: signal: killed; it wrote nothing to stderr (`, script)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v\nwant prefix %s", err, want)
	}
}
