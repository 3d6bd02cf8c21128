package sandbox

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"
)

// Invalid UTF-8 from a plugin (hole 8 of the security review) becomes U+FFFD
// in the result, whatever the ABI, so the run that receives it goes on.

func wantValid(t *testing.T, res CallResult, isError bool, text, structured string) {
	t.Helper()
	wantResult(t, res, isError, text)
	if string(res.StructuredContent) != structured {
		t.Fatalf("structuredContent %s, want %s", res.StructuredContent, structured)
	}
	for _, c := range res.Content {
		if !utf8.ValidString(c.Text) || !utf8.ValidString(c.Type) {
			t.Fatalf("invalid UTF-8 in %q", c)
		}
	}
}

func TestInvalidUTF8OutputBecomesReplacementCharacters(t *testing.T) {
	g := loadGuest(t, newTestRuntime(t), Permissions{Timeout: 2 * time.Second}, nil)
	// Plain output: each run of bad bytes is one U+FFFD.
	wantValid(t, callTool(t, g, "bad_utf8", `{"text":"plain"}`), false, "caf\uFFFD \uFFFD!", "")
	// A CallToolResult JSON (the mcp ABI's decoder): each bad byte is one U+FFFD,
	// in the text and in structuredContent, which is otherwise passed through raw.
	wantValid(t, callTool(t, g, "bad_utf8", `{"text":"json"}`), false, "caf\uFFFD", `{"k":"`+"\uFFFD\uFFFD"+`"}`)
	// The plugin's own error message.
	wantValid(t, callTool(t, g, "bad_utf8", `{"text":"error"}`), true, `plugin "guest": bad_utf8: bad `+"\uFFFD"+` error`, "")
}

func TestInvalidUTF8InAHookFault(t *testing.T) {
	g := loadGuest(t, newTestRuntime(t), Permissions{Timeout: 2 * time.Second}, nil)
	_, err := g.CallExport(context.Background(), "bad_utf8", []byte("error"))
	if err == nil || err.Error() != `plugin "guest": bad_utf8: bad `+"\uFFFD"+` error` {
		t.Fatalf("got %v", err)
	}
}

func TestInvalidUTF8FromAWASICommand(t *testing.T) {
	p := load(t, newTestRuntime(t), Config{Name: "shout", Wasm: fixtures.wasicmd,
		Tools: []ToolDecl{{Name: "shout"}}, Permissions: Permissions{Timeout: 2 * time.Second}})
	wantValid(t, callTool(t, p, "shout", `{"text":"badutf8"}`), false, "caf\uFFFD \uFFFD!", "")
	wantValid(t, callTool(t, p, "shout", `{"text":"badutf8err"}`), true, "exited with code 3: bad \uFFFD", "")
}
