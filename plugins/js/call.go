package js

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// Call runs tool name's handler with args (a JSON object) and host for the
// call's host functions. It never fails: what the handler throws, a promise
// it rejects or leaves pending, and a value JSON cannot hold are isError
// results saying so, the stack included.
//
// What the handler returns becomes the result: a string is its text;
// undefined or null an empty text; an object with a "content" array is taken
// as a CallToolResult as it is; any other value is its JSON as text and as
// structuredContent.
func (e *Engine) Call(host Host, meta CallMeta, name string, args []byte) sdk.CallToolResult {
	var t *Tool
	for _, have := range e.tools {
		if have.Name == name {
			t = have
		}
	}
	if t == nil {
		return errorResult("unknown tool %q", name)
	}
	e.host, e.meta = host, meta
	defer func() { e.host, e.meta = nil, CallMeta{} }()
	if !utf8.Valid(args) {
		args = []byte(strings.ToValidUTF8(string(args), "\uFFFD"))
	}
	in, err := e.parse(string(args))
	if err != nil {
		return errorResult("%s: arguments are not JSON: %v", name, err)
	}
	v, err := e.settle(func() (goja.Value, error) { return t.handler(goja.Undefined(), in) })
	if err != nil {
		return errorResult("%s: %v", name, err)
	}
	res, err := e.result(v)
	if err != nil {
		return errorResult("%s: the handler returned %v", name, err)
	}
	return res
}

// Hooks maps each function of the "agenthost" module that registers a hook
// to the export that calls it (plugins/sdk/ABI.md, the hook kinds).
var Hooks = map[string]string{
	"guard":        "guard",         // kind guardrail
	"onStep":       "on_step",       // kind termination
	"beforeFinal":  "before_final",  // kind termination
	"contextBuild": "context_build", // kind context
	"permit":       "permit",        // kind permission
	"grade":        "grade",         // kind evaluator
}

// Hook runs the function the bundle registered for export with the hook's
// input (JSON) and returns its answer as JSON. ok is false when the bundle
// registered none.
func (e *Engine) Hook(export string, host Host, input []byte) (out []byte, ok bool, err error) {
	fn, ok := e.hooks[export]
	if !ok {
		return nil, false, nil
	}
	e.host = host
	defer func() { e.host = nil }()
	in, err := e.parse(strings.ToValidUTF8(string(input), "\uFFFD"))
	if err != nil {
		return nil, true, fmt.Errorf("%s: input: %w", export, err)
	}
	v, err := e.settle(func() (goja.Value, error) { return fn(goja.Undefined(), in) })
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", export, err)
	}
	s, err := e.stringify(v)
	if err != nil {
		return nil, true, fmt.Errorf("%s: the function returned %w", export, err)
	}
	return []byte(s), true, nil
}

// settle calls fn and, when it returns a promise (an async handler), the
// value the promise settled on. Host functions answer at once, so a promise
// that awaits only them and other promises has settled when the call's jobs
// have run; one still pending waits for something nothing will deliver (no
// timers, no event loop), and is an error rather than a hang.
func (e *Engine) settle(fn func() (goja.Value, error)) (goja.Value, error) {
	v, err := e.run(fn)
	if err != nil {
		return nil, err
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return v, nil
	}
	switch p.State() {
	case goja.PromiseStateFulfilled:
		return p.Result(), nil
	case goja.PromiseStateRejected:
		r := p.Result()
		if obj, isObj := r.(*goja.Object); isObj {
			if stack := obj.Get("stack"); stack != nil && !goja.IsUndefined(stack) {
				return nil, errors.New(e.cleanStack(stack.String()))
			}
		}
		return nil, fmt.Errorf("rejected: %v", r)
	default:
		return nil, errors.New("the promise it returned never settled: a handler may await host functions and promises, and there are no timers")
	}
}

// result turns a handler's value into a CallToolResult.
func (e *Engine) result(v goja.Value) (sdk.CallToolResult, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return sdk.Text(""), nil
	}
	if s, ok := v.Export().(string); ok {
		return sdk.Text(s), nil
	}
	s, err := e.stringify(v)
	if err != nil {
		return sdk.CallToolResult{}, err
	}
	if obj, ok := v.(*goja.Object); ok {
		if c := obj.Get("content"); c != nil && c.ExportType() != nil && c.ExportType().Kind().String() == "slice" {
			var res sdk.CallToolResult
			if err := json.Unmarshal([]byte(s), &res); err != nil {
				return sdk.CallToolResult{}, fmt.Errorf("an object with content that is not a CallToolResult: %w", err)
			}
			return res, nil
		}
	}
	res := sdk.Text(s)
	res.StructuredContent = json.RawMessage(s)
	return res, nil
}
