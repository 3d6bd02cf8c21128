package sdk_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/plugins/sdk"
)

// jsonFields lists a struct's JSON field names (embedded structs flattened), sorted.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// The SDK's JSON types mirror the host's: a plugin written against the SDK reads and
// writes exactly the fields the loop sends and expects. A field added on one side only
// (a plan step's depends_on, a plan's parameters; a message's reasoning_state, which a
// context plugin rewriting messages used to drop) fails here. sdk.ToolSpec is MCP's tool
// descriptor (inputSchema), not the loop's, and is not a mirror.
func TestSDKTypesMirrorTheLoops(t *testing.T) {
	for _, p := range []struct {
		sdk, host any
	}{
		{sdk.Plan{}, loop.Plan{}},
		{sdk.PlanStep{}, loop.PlanStep{}},
		{sdk.StepOutcome{}, loop.StepOutcome{}},
		{sdk.PlanInput{}, loop.PlanInput{}},
		{sdk.EvalInput{}, loop.EvalInput{}},
		{sdk.Evaluation{}, loop.Evaluation{}},
		{sdk.Usage{}, loop.Usage{}},
		{sdk.ToolCall{}, loop.ToolCall{}},
		{sdk.Message{}, loop.Message{}},
		{sdk.Part{}, loop.Part{}},
	} {
		st, ht := reflect.TypeOf(p.sdk), reflect.TypeOf(p.host)
		if s, h := jsonFields(st), jsonFields(ht); !slices.Equal(s, h) {
			t.Errorf("sdk.%s has %v, loop.%s has %v", st.Name(), s, ht.Name(), h)
		}
	}
}
