package js

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// MaxCallStack bounds the depth of JavaScript calls: deeper recursion is a
// RangeError the handler may catch, long before the Go stack meets the
// plugin's memory limit.
const MaxCallStack = 4096

// Tool is one tool a bundle declared.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	handler     goja.Callable
}

// Engine is one loaded bundle. It is not safe for concurrent use: a plugin
// instance serves one call at a time.
type Engine struct {
	vm    *goja.Runtime
	tools []*Tool
	hooks map[string]goja.Callable // by export (Hooks)
	host  Host                     // nil while the bundle loads and between calls
	// loading is true while the bundle's top level runs: tools are
	// declared then, and host functions refused.
	loading bool
	// mapped is true for a bundle with a source map (jsbundle's always
	// have one): its positions are the source's.
	mapped        bool
	jsonStringify goja.Callable
	jsonParse     goja.Callable
	meta          CallMeta
	ran           bool // Run was called: one bundle per engine
}

// New makes an engine ready for a bundle: the JavaScript runtime, its
// globals (require, module, exports) and the "agenthost" module, with the
// builtins every call uses already touched. It calls no host function, so a
// pre-initialised plugin makes it in init and every instance starts with it.
func New() *Engine {
	e := &Engine{vm: goja.New(), hooks: map[string]goja.Callable{}}
	e.vm.SetMaxCallStackSize(MaxCallStack)
	e.vm.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	module := e.vm.NewObject()
	exports := e.vm.NewObject()
	agenthost := e.module()
	for name, v := range map[string]any{
		"module": module, "exports": exports,
		"require": func(name string) goja.Value {
			if name == "agenthost" {
				return agenthost
			}
			panic(e.vm.NewTypeError("require(%q): only \"agenthost\" is provided; bundle other modules into the script", name))
		},
	} {
		if err := e.vm.Set(name, v); err != nil {
			panic(err) // a fresh runtime's globals are writable
		}
	}
	if err := module.Set("exports", exports); err != nil {
		panic(err)
	}
	// goja makes builtins at first use: touch the ones a call uses (JSON,
	// promises, errors), so they are made here, once, rather than per instance.
	if _, err := e.vm.RunString(`JSON.parse(JSON.stringify({a: [1, "b"]})); Promise.resolve(1).then((x) => x); new Error("warm").stack;`); err != nil {
		panic(err)
	}
	e.parse("{}")
	e.stringify(e.vm.ToValue(1))
	return e
}

// Load is New and Run.
func Load(file, bundle string) (*Engine, error) {
	e := New()
	if err := e.Run(file, bundle); err != nil {
		return nil, err
	}
	return e, nil
}

// Run runs bundle (named file in stack traces), once, and keeps the tools it
// declares. A bundle that throws, declares a tool twice or badly, or
// declares nothing, fails.
func (e *Engine) Run(file, bundle string) error {
	if e.ran {
		return errors.New("the engine already ran a bundle")
	}
	e.ran = true
	e.mapped = strings.Contains(bundle, "\n//# sourceMappingURL=")
	prog, err := goja.Compile(file, bundle, false)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	e.loading = true
	_, err = e.run(func() (goja.Value, error) { return e.vm.RunProgram(prog) })
	e.loading = false
	if err != nil {
		return fmt.Errorf("%s: loading the bundle: %w", file, err)
	}
	if len(e.tools) == 0 && len(e.hooks) == 0 {
		return fmt.Errorf("%s: the bundle declares no tool: call tool({name, description, inputSchema, handler}) or a hook (guard, onStep, …) from \"agenthost\"", file)
	}
	return nil
}

// Tools lists the declared tools in declaration order.
func (e *Engine) Tools() []Tool {
	out := make([]Tool, len(e.tools))
	for i, t := range e.tools {
		out[i] = *t
	}
	return out
}

// declare is the "agenthost" module's tool({...}).
func (e *Engine) declare(call goja.FunctionCall) goja.Value {
	if !e.loading {
		panic(e.vm.NewTypeError("tool(): declare tools when the bundle loads, not from a handler"))
	}
	obj := call.Argument(0).ToObject(e.vm)
	name := obj.Get("name")
	if name == nil || goja.IsUndefined(name) || name.String() == "" {
		panic(e.vm.NewTypeError("tool(): name is required"))
	}
	t := &Tool{Name: name.String()}
	for _, have := range e.tools {
		if have.Name == t.Name {
			panic(e.vm.NewTypeError("tool(): %q is declared twice", t.Name))
		}
	}
	if d := obj.Get("description"); d != nil && !goja.IsUndefined(d) {
		t.Description = d.String()
	}
	h, ok := goja.AssertFunction(obj.Get("handler"))
	if !ok {
		panic(e.vm.NewTypeError("tool(%q): handler must be a function", t.Name))
	}
	t.handler = h
	schema := obj.Get("inputSchema")
	if schema == nil || goja.IsUndefined(schema) {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	} else {
		if _, isObj := schema.Export().(map[string]any); !isObj {
			panic(e.vm.NewTypeError("tool(%q): inputSchema must be a JSON Schema object", t.Name))
		}
		s, err := e.stringify(schema)
		if err != nil {
			panic(e.vm.NewTypeError("tool(%q): inputSchema: %v", t.Name, err))
		}
		t.InputSchema = json.RawMessage(s)
	}
	e.tools = append(e.tools, t)
	return goja.Undefined()
}

// stringify is JSON.stringify: an error for what JSON cannot hold (a cycle,
// a BigInt) and for a value it leaves out (a function, a symbol, undefined).
func (e *Engine) stringify(v goja.Value) (string, error) {
	if e.jsonStringify == nil {
		f, _ := goja.AssertFunction(e.vm.Get("JSON").ToObject(e.vm).Get("stringify"))
		e.jsonStringify = f
	}
	out, err := e.run(func() (goja.Value, error) { return e.jsonStringify(goja.Undefined(), v) })
	if err != nil {
		return "", err
	}
	if goja.IsUndefined(out) {
		return "", fmt.Errorf("%s is not JSON", typeOf(v))
	}
	return out.String(), nil
}

func typeOf(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if _, ok := goja.AssertFunction(v); ok {
		return "a function"
	}
	if _, ok := v.Export().(goja.Symbol); ok {
		return "a symbol"
	}
	return "the value"
}

// run runs fn, then the promise jobs it queued, and turns a JavaScript
// exception into an error that carries the stack: the bundle's file, line and
// column (the TypeScript source's, through the bundle's source map).
func (e *Engine) run(fn func() (goja.Value, error)) (v goja.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	v, err = fn()
	return v, e.describe(err)
}

// describe words a goja error: an exception as its message and stack.
func (e *Engine) describe(err error) error {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return errors.New(e.cleanStack(ex.String()))
	}
	var overflow *goja.StackOverflowError
	if errors.As(err, &overflow) {
		return fmt.Errorf("RangeError: Maximum call stack size exceeded (%d calls)\n%s", MaxCallStack, e.cleanStack(overflow.String()))
	}
	var interrupted *goja.InterruptedError
	if errors.As(err, &interrupted) {
		return fmt.Errorf("interrupted: %v", interrupted.Value())
	}
	return err
}

// framePC is goja's bytecode offset after a frame's line:column, which says
// nothing to an author.
var framePC = regexp.MustCompile(`(:\d+:\d+)\(\d+\)`)

// maxFrames is how many frames of a stack an error keeps: a runaway
// recursion's thousands say no more than the first few.
const maxFrames = 10

// mappedColumn is a frame's line:column after a source map: goja gives the
// map's column as it is, counted from 0, where every other column counts from 1.
var mappedColumn = regexp.MustCompile(`:(\d+):(\d+)(\)?)$`)

// cleanStack trims a goja stack for an author: positions as file:line:col
// (columns from 1, mapped or not), no frames of the runtime's own Go
// functions, and at most maxFrames frames.
func (e *Engine) cleanStack(s string) string {
	var out []string
	frames := 0
	for _, l := range strings.Split(framePC.ReplaceAllString(strings.TrimSpace(s), "$1"), "\n") {
		at := strings.HasPrefix(strings.TrimSpace(l), "at ")
		if at && strings.HasSuffix(l, "(native)") {
			continue
		}
		if at && e.mapped {
			l = mappedColumn.ReplaceAllStringFunc(l, func(pos string) string {
				m := mappedColumn.FindStringSubmatch(pos)
				col, _ := strconv.Atoi(m[2])
				return fmt.Sprintf(":%s:%d%s", m[1], col+1, m[3])
			})
		}
		if at {
			if frames++; frames > maxFrames {
				out = append(out, "\t... more frames")
				break
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// errorResult is a failed call's result, its text what happened.
func errorResult(format string, a ...any) sdk.CallToolResult {
	return sdk.ErrorText(fmt.Sprintf(format, a...))
}
