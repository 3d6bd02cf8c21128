package plugins

import (
	"context"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/sandbox"
)

func TestCalc(t *testing.T) {
	p := loadExample(t, "go/calc", sandbox.Config{})
	for _, c := range []struct {
		expr    string
		isError bool
		want    string
	}{
		{"1 + 2", false, "3"},
		{"2 * (3 + 4)", false, "14"},
		{"-(1.5 + 2) * 4", false, "-14"},
		{"10 / 4", false, "2.5"},
		{"0.1 + 0.2", false, "0.3"},
		{"--3", false, "3"},
		{"2 - -2", false, "4"},
		{"1 / 3", false, "0.333333333333333"},
		{"((2))*.5", false, "1"},
		{"-0", false, "0"},
		{"", true, "empty expression"},
		{"   ", true, "empty expression"},
		{"1 / 0", true, "division by zero"},
		{"1 / (2 - 2)", true, "division by zero"},
		{"1 +", true, "unexpected end of expression"},
		{"(1 + 2", true, `missing ")" for "(" at position 1`},
		{"1 + 2)", true, `unexpected ")" at position 6`},
		{"2 ^ 3", true, `unexpected "^" at position 3`},
		{"1.2.3", true, `invalid number "1.2.3" at position 1`},
		{"abc", true, `unexpected "a" at position 1`},
		{"1e400", true, `unexpected "e" at position 2`},
	} {
		wantTool(t, p, "calc", `{"expression":`+quote(c.expr)+`}`, c.isError, c.want)
	}
	wantTool(t, p, "calc", `{"expression":1}`, true,
		"calc: invalid arguments: json: cannot unmarshal number into Go struct field calcArgs.expression of type string")
}

// TestSDKToolIsHyperMCP: a tool built with plugins/sdk is detected as the mcp
// ABI (the hyper-mcp path) and answers the v1 and v2 exports in their shapes.
func TestSDKToolIsHyperMCP(t *testing.T) {
	p := loadExample(t, "go/calc", sandbox.Config{})
	if p.ABI() != sandbox.ABIMCP {
		t.Fatalf("ABI() = %q, want mcp", p.ABI())
	}
	for _, e := range []string{"describe", "call", "list_tools", "call_tool"} {
		if !slices.Contains(p.Exports(), e) {
			t.Errorf("exports %v lack %s", p.Exports(), e)
		}
	}
	const spec = `{"name":"calc","description":"Evaluate an arithmetic expression (+ - * / parentheses, decimals, unary minus).",` +
		`"inputSchema":{"type":"object","properties":{"expression":{"description":"arithmetic with + - * / ( ) and decimals, e.g. -(1.5+2)*4","type":"string"}},"required":["expression"]}}`
	tools := p.Tools()
	if len(tools) != 1 || tools[0].Name != "calc" {
		t.Fatalf("Tools() = %+v", tools)
	}
	wantJSON(t, "Tools()[0].InputSchema", string(tools[0].InputSchema), `{"type":"object","properties":{"expression":{"description":"arithmetic with + - * / ( ) and decimals, e.g. -(1.5+2)*4","type":"string"}},"required":["expression"]}`)
	ctx := context.Background()
	out := func(export, in string) string {
		b, err := p.CallExport(ctx, export, []byte(in))
		if err != nil {
			t.Fatalf("%s: %v", export, err)
		}
		return string(b)
	}
	wantJSON(t, "describe (v1)", out("describe", `{}`), `{"tools":[`+spec+`]}`)
	wantJSON(t, "list_tools (v2)", out("list_tools", `{"context":{"_meta":{},"id":1}}`), `{"tools":[`+spec+`]}`)
	wantJSON(t, "call (v1)", out("call", `{"params":{"name":"calc","arguments":{"expression":"6*7"}}}`),
		`{"content":[{"type":"text","text":"42"}],"isError":false}`)
	wantJSON(t, "call_tool (v2)", out("call_tool", `{"request":{"name":"calc","arguments":{"expression":"6/0"}},"context":{"_meta":{},"id":2}}`),
		`{"content":[{"type":"text","text":"division by zero"}],"isError":true}`)
	wantJSON(t, "call of an unknown tool", out("call", `{"params":{"name":"nope","arguments":{}}}`),
		`{"content":[{"type":"text","text":"unknown tool \"nope\""}],"isError":true}`)
}
