package plugins

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/sandbox"
)

// A pre-initialised plugin (sandbox.Config.Preinit) behaves exactly as
// built: the same calls give the same results, byte for byte, in every
// isolation mode (with "call", every call runs on a fresh instance of the
// snapshot), and _initialize is no longer among its exports.
func TestPreinitPluginBehavesAsBuilt(t *testing.T) {
	calls := map[string][][2]string{ // example: {target, input}
		"go/calc": {
			{"calc", `{"expression":"-(1.5+2)*4/(3-1)"}`}, {"calc", `{"expression":"1 / 3"}`},
			{"calc", `{"expression":"1 / 0"}`}, {"calc", `{"expression":"(1 + 2"}`}, {"calc", `{"expression":1}`},
		},
		"go/text": {
			{"word_count", `{"text":"one two three four five"}`}, {"word_count", `{"text":""}`},
		},
		"go/redact": {
			{"guard", `{"stage":"output","content":"mail me at a@b.io or call +1 555 123 4567"}`},
			{"guard", `{"stage":"input","content":"nothing to hide"}`},
		},
	}
	for _, example := range []string{"go/calc", "go/text", "go/redact"} {
		for _, iso := range []string{sandbox.IsolationCall, sandbox.IsolationSession, sandbox.IsolationPooled} {
			t.Run(example+"/"+iso, func(t *testing.T) {
				perms := sandbox.Permissions{Isolation: iso}
				built := loadExample(t, example, sandbox.Config{Permissions: perms})
				pre := loadExample(t, example, sandbox.Config{Permissions: perms, Preinit: sandbox.PreinitOn})
				if slices.Contains(pre.Exports(), "_initialize") {
					t.Errorf("pre-initialised exports %v still list _initialize", pre.Exports())
				}
				if want := slices.DeleteFunc(built.Exports(), func(e string) bool { return e == "_initialize" }); !slices.Equal(pre.Exports(), want) {
					t.Errorf("exports %v, want %v", pre.Exports(), want)
				}
				if fmt.Sprint(pre.Tools()) != fmt.Sprint(built.Tools()) {
					t.Errorf("tools %v, want %v", pre.Tools(), built.Tools())
				}
				for round := range 2 { // a second round reuses instances unless iso is "call"
					for _, c := range calls[example] {
						want, got := callPlugin(t, built, c[0], c[1]), callPlugin(t, pre, c[0], c[1])
						if got != want {
							t.Errorf("round %d %s(%s):\n got %s\nwant %s", round, c[0], c[1], got, want)
						}
					}
				}
			})
		}
	}
}

// callPlugin calls a tool, or an export when p has no tool of that name,
// and renders the outcome.
func callPlugin(t *testing.T, p *sandbox.Plugin, target, input string) string {
	t.Helper()
	ctx := sandbox.WithSession(context.Background(), "s")
	for _, tool := range p.Tools() {
		if tool.Name == target {
			res, err := p.InvokeTool(ctx, target, []byte(input))
			return fmt.Sprintf("isError=%v %q %v", res.IsError, res.Text(), err)
		}
	}
	out, err := p.CallExport(ctx, target, []byte(input))
	return fmt.Sprintf("%q %v", out, err)
}
