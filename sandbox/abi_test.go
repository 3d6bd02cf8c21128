package sandbox

import (
	"encoding/json"
	"testing"
)

func TestToolListRefusesWhatTheModelCannotBeOffered(t *testing.T) {
	for in, want := range map[string]string{
		`{"tools":[{"name":""}]}`:                         "tool 0 has no name",
		`{"tools":[{"name":"a"},{"name":"a"}]}`:           `tool "a" listed twice`,
		`{"tools":[{"name":"a","inputSchema":"object"}]}`: `tool "a": inputSchema is not a JSON object`,
		`{"tools":[{"name":"a","inputSchema":[1]}]}`:      `tool "a": inputSchema is not a JSON object`,
		`["a"]`: "returned no tool list: json: cannot unmarshal array into Go value of type sandbox.mcpToolList",
	} {
		if _, err := decodeToolList([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
	tools, err := decodeToolList([]byte("{\"tools\":[{\"name\":\"a\xff\",\"inputSchema\":{\"k\":\"\xff\"}}]}"))
	if err != nil || len(tools) != 1 || tools[0].Name != "a\uFFFD" || string(tools[0].InputSchema) != `{"k":"`+"\uFFFD"+`"}` {
		t.Fatalf("got %+v %v", tools, err)
	}
}

func TestMCPArgumentsWrapWhatIsNotAnObject(t *testing.T) {
	for in, want := range map[string]string{
		`{"q":"x"}`: `{"q":"x"}`,
		`{"q":"abc`: `{"_raw":"{\"q\":\"abc"}`,
		`not json`:  `{"_raw":"not json"}`,
		`[1]`:       `{"_raw":"[1]"}`,
		"\xff":      `{"_raw":"` + "\uFFFD" + `"}`,
	} {
		got := mcpArguments([]byte(in))
		if string(got) != want || !json.Valid(got) {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
}
