package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/loop"
)

// A plugin's describe output is not trusted: MCP needs an object schema, and the SDK
// panics on anything else, so a bad one leaves the tool out with a reason.
func TestObjectSchemaRefusesWhatMCPCannotOffer(t *testing.T) {
	for raw, want := range map[string]string{
		``:                           `{"type":"object"}`,
		`null`:                       `{"type":"object"}`,
		`{"properties":{}}`:          `{"properties":{},"type":"object"}`,
		`{"type":"object","a":1}`:    `{"a":1,"type":"object"}`,
		`{"type":"string"}`:          "error: input schema has type string, not object",
		`[1,2]`:                      "error: input schema is not a JSON object",
		`{"type":["object","null"]}`: "error: input schema has type [object null], not object",
	} {
		m, err := objectSchema(json.RawMessage(raw))
		got := "error: "
		if err != nil {
			got += err.Error()
		} else {
			b, _ := json.Marshal(m)
			got = string(b)
		}
		if got != want {
			t.Errorf("%q: got %s, want %s", raw, got, want)
		}
	}
}

func TestGuardedTurnsAnSDKPanicIntoAnError(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	err := guarded("p", "resource template", func() {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "bad", URITemplate: "{{{not a template"}, nil)
	})
	if err == nil || !strings.Contains(err.Error(), `plugin "p": a resource template not offered`) {
		t.Fatalf("err %v", err)
	}
}

func TestResultWithABadImageStaysAResult(t *testing.T) {
	res := toMCP(loop.ToolResult{Content: []loop.Part{{Type: loop.PartImage, URL: "data:image/png;base64,%%%"}, loop.TextPart("ok")}})
	if len(res.Content) != 2 || res.Content[0].(*mcp.TextContent).Text != "(an image that is not base64)" {
		t.Fatalf("%+v", res.Content)
	}
}
