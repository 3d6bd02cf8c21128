package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// elicitingHost is a testHost that asks a user: it answers what the plugin asked.
type elicitingHost struct {
	testHost
	err error
}

func (h *elicitingHost) Elicit(_ context.Context, plugin string, req json.RawMessage) (json.RawMessage, error) {
	if h.err != nil {
		return nil, h.err
	}
	var r struct{ Message string }
	_ = json.Unmarshal(req, &r)
	return json.Marshal(map[string]any{"action": "accept", "content": map[string]string{"plugin": plugin, "said": r.Message}})
}

// create_elicitation reaches a Host that can ask a user (Eliciter); any other Host, or
// none, answers a decline; a request that is not JSON and a Host that fails end the call
// with an error naming the function.
func TestCreateElicitationAsksAHostThatCanElseDeclines(t *testing.T) {
	r := newTestRuntime(t)
	tool := tools(map[string]string{"elicit": ""})
	asking := load(t, r, Config{Name: "guest", Wasm: fixtures.guest, Host: &elicitingHost{}, Tools: tool})
	wantResult(t, callTool(t, asking, "elicit", `{"message":"who?"}`), false, `{"action":"accept","content":{"plugin":"guest","said":"who?"}}`)
	wantResult(t, callTool(t, asking, "elicit", `not json`), true, `plugin "guest": elicit: create_elicitation: request is not JSON`)
	failing := load(t, r, Config{Name: "guest", Wasm: fixtures.guest, Host: &elicitingHost{err: errors.New("the client went away")}, Tools: tool})
	wantResult(t, callTool(t, failing, "elicit", `{"message":"who?"}`), true, `plugin "guest": elicit: create_elicitation: the client went away`)
	for _, h := range []Host{&testHost{}, nil} {
		p := load(t, r, Config{Name: "guest", Wasm: fixtures.guest, Host: h, Tools: tool})
		wantResult(t, callTool(t, p, "elicit", `{"message":"who?"}`), false, `{"action":"decline"}`)
	}
}
