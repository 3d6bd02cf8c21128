package host

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// A TypeScript tool, bundled by the host and run by the JS runtime plugin, streams its
// result with streamResult: in a run each piece is a tool_result_delta of the call,
// between its tool_call and tool_result, and the stored result is the whole value the
// handler returned (no piece is stored).
func TestATypeScriptToolStreamsItsResultThroughStreamResult(t *testing.T) {
	runtime, err := jsRuntimeWasm()
	if err != nil {
		t.Fatal(err)
	}
	h, err := openJSHost(t, `import { tool, streamResult } from "agenthost";

tool({
  name: "scan",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler(a: { text: string }) {
    const hits: string[] = a.text.match(/[0-9]+/g) ?? [];
    for (const h of hits) {
      streamResult(h + "\n");
    }
    return hits.join("\n") + "\n";
  },
});
`, `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "scan", "arguments": "{\"text\":\"a1 b22 c333\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "{{result c1}}"}]}`, fmt.Sprintf(`[[plugins]]
name = "scan"
js = "tool.ts"
wasm = %q
[plugins.permissions]
timeout = "60s" # the runtime's _initialize is slow under -race on a loaded machine
`, runtime))
	if err != nil {
		t.Fatal(err)
	}
	got := streamOrder(t, h, nil)
	sameEvents(t, "events", got, []string{"call c1", "delta c1 1\n", "delta c1 22\n", "delta c1 333\n", "result c1 1\n22\n333\n"})
	entries, err := h.Store.Load(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, e := range entries {
		if e.Event == nil {
			continue
		}
		switch d := e.Event.Data.(type) {
		case *loop.ToolResultData:
			stored = append(stored, d.Content)
		case *loop.ToolResultDeltaData:
			t.Fatalf("a piece was stored: %+v", d)
		}
	}
	sameEvents(t, "stored results", stored, []string{"1\n22\n333\n"})
}
