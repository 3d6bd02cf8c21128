package host

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

func funcTool(name string, fn func() string) loop.Tool {
	return loop.FuncTool{ToolSpec: loop.ToolSpec{Name: name}, Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult(fn()), nil
	}}
}

// An embedding program's Go tools (Options.Tools) are tools like the plugins': listed
// under the owner "go", called by the model through the one pipeline (a tool_policy's
// approval applies to them, so without an approver the call is refused), and a name a
// plugin already offers refuses Open rather than shadowing it.
func TestGoToolsBesidePluginsTakeThePipelineAndMayNotShadowAPluginTool(t *testing.T) {
	called := 0
	now := funcTool("now", func() string { called++; return "noon" })
	h := openHostWith(t, "[agent.tool_policy]\nrequire_approval = [\"now\"]", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "now", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}`, "[[plugins]]\nname = \"calc\"\nwasm = "+`"`+calcWasm+`"`+"\n", Options{Tools: []loop.Tool{now}})
	if got := h.ModelToolNames()[GoToolOwner]; len(got) != 1 || got[0] != "now" {
		t.Fatalf("the Go tools listed: %v", h.ModelToolNames())
	}
	res, err := h.Runner().RunWith(context.Background(), loop.RunInput{SessionID: "s", Messages: []loop.Message{loop.UserMessage("time?")}}, nil)
	if err != nil || called != 0 || !strings.Contains(res.Final.Text(), "approval") {
		t.Fatalf("a Go tool that needs approval, with no approver: called %d times, answer %q %v", called, res.Final.Text(), err)
	}

	_, err = openHostErr(t, "", `{"turns": [{"text": "x"}]}`, "[[plugins]]\nname = \"calc\"\nwasm = "+`"`+calcWasm+`"`+"\n",
		Options{Tools: []loop.Tool{funcTool("calc", func() string { return "shadow" })}})
	if err == nil || !strings.Contains(err.Error(), `Options.Tools: a tool named "calc" is already offered`) {
		t.Fatalf("a Go tool shadowing the plugin's calc: %v", err)
	}
}
