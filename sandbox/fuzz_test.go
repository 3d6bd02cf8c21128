package sandbox

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for every decoder of plugin-provided bytes (and of the
// model's arguments on their way in). Seeds live in testdata/fuzz/FuzzXxx/;
// `make fuzz` runs each target for a while. The property is always: no
// panic, and what comes out is what the rest of the host relies on.

// allValid fails unless every string of res is valid UTF-8 and its
// structuredContent is absent or valid JSON.
func allValid(t *testing.T, res CallResult) {
	for _, c := range res.Content {
		for _, s := range []string{c.Type, c.Text, c.Data, c.MimeType} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q in %+v", s, res)
			}
		}
	}
	if len(res.StructuredContent) > 0 && (!json.Valid(res.StructuredContent) || !utf8.Valid(res.StructuredContent)) {
		t.Fatalf("structuredContent %q is not valid JSON", res.StructuredContent)
	}
}

// FuzzCallResult decodes a tool's output: the mcp ABI's CallToolResult
// (plain false) and the extism / wasi output, JSON or text (plain true).
func FuzzCallResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"isError":true}`,
		`{"content":[],"structuredContent":{"a":[1,2]},"_meta":{"agenthost/final":true}}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}],\"structuredContent\":{\"k\":\"\xff\"}}",
		"plain \xff text\n", `{"content":null}`, `{`, ``, `[]`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	p := &Plugin{name: "fuzz"}
	f.Fuzz(func(t *testing.T, out []byte, plain bool) {
		res, err := parseCallResult(p, "call", out, plain)
		if err != nil {
			if plain {
				t.Fatalf("plain output failed: %v", err)
			}
			return
		}
		if res.Content == nil && !plain {
			t.Fatalf("accepted a result without content: %q", out)
		}
		allValid(t, res.validUTF8())
	})
}

// FuzzToolList decodes an mcp plugin's describe / list_tools answer.
func FuzzToolList(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"calc","description":"d","inputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"a"},{"name":"a"}]}`,
		`{"tools":[{"name":""}]}`,
		`{"tools":[{"name":"x","inputSchema":"str"}]}`,
		"{\"tools\":[{\"name\":\"\xff\",\"inputSchema\":{\"\xfe\":1}}]}",
		`{"tools":null}`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		tools, err := decodeToolList(out)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, tool := range tools {
			if tool.Name == "" || seen[tool.Name] || !utf8.ValidString(tool.Name) || !utf8.ValidString(tool.Description) {
				t.Fatalf("bad tool accepted: %+v", tool)
			}
			seen[tool.Name] = true
			if len(tool.InputSchema) > 0 && !json.Valid(tool.InputSchema) {
				t.Fatalf("schema %q is not JSON", tool.InputSchema)
			}
		}
	})
}

// FuzzMCPArguments maps the model's arguments onto an mcp call: always a
// JSON object, the original text under "_raw" when it was not one.
func FuzzMCPArguments(f *testing.F) {
	for _, s := range []string{`{"q":"x"}`, `{"q":"abc`, `not json`, `[1,2]`, `"s"`, "\xff", ``, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		got := mcpArguments(args)
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil || obj == nil {
			t.Fatalf("%q became %q, not a JSON object", args, got)
		}
		if string(got) != string(args) {
			raw, ok := obj["_raw"].(string)
			if !ok || len(obj) != 1 || (utf8.Valid(args) && raw != string(args)) {
				t.Fatalf("%q became %q", args, got)
			}
		}
	})
}

// FuzzExtismInput maps a tool call's arguments onto an extism export's input.
func FuzzExtismInput(f *testing.F) {
	for _, s := range []string{`{"text":"hello"}`, `{"text":5}`, `{}`, `[]`, `{"text":"\u00e9"}`, `{`} {
		f.Add("text", []byte(s))
		f.Add("", []byte(s))
	}
	f.Fuzz(func(t *testing.T, field string, args []byte) {
		in, err := extismInput(ToolDecl{Input: field}, args)
		if (field == "" || field == "arguments") && (err != nil || string(in) != string(args)) {
			t.Fatalf("arguments not passed through: %q %v", in, err)
		}
	})
}

// FuzzModuleInfo reads the sections of a plugin's module before compiling it.
func FuzzModuleInfo(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	// (memory 1) (func (export "f")) with an import of extism:host/env.
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\x15\x01\x0fextism:host/env\x01x\x00\x00\x05\x03\x01\x00\x01\x07\x05\x01\x01f\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x07\xff\xff\xff\xff\x0f"))
	f.Add(fixtures.hostile)
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := parseModuleInfo(b)
		if err == nil && len(b) < 8 {
			t.Fatalf("accepted %d bytes", len(b))
		}
		_ = info.exportSet()
	})
}
