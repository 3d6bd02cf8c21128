package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// The wasi ABI runs a WASI command (`_start`) once per call: the arguments
// JSON on stdin, the tool's Args (or Config.Args) as argv, AGENTHOST_TOOL and
// the call's ids (callEnv) in the environment, the result on stdout (a CallToolResult
// JSON, or else plain text). A non-zero exit code is an error result with
// the code and stderr. Every call is a fresh instance of the compiled module
// (a command runs once), so there is no pool, only a bound on concurrency.
type wasiABI struct {
	p        *Plugin
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	slots    chan struct{}       // a call holds one while its instance runs
	args     map[string][]string // argv by tool, when its ToolDecl sets one
}

// wasiExport is what a call of a wasi plugin runs, as faults name it.
const wasiExport = "_start"

func (*wasiABI) name() string { return ABIWASI }

func (a *wasiABI) load(ctx context.Context, s loadSpec) error {
	p, decls := a.p, s.decls
	if len(decls) == 0 {
		decls = []ToolDecl{{Name: p.name}}
	}
	seen := map[string]bool{}
	toolArgs := map[string][]string{}
	for _, d := range decls {
		if len(d.Args) > 0 {
			toolArgs[d.Name] = d.Args
		}
		if d.Name == "" || seen[d.Name] {
			return fmt.Errorf("wasi tool names must be present and unique (got %q)", d.Name)
		}
		seen[d.Name] = true
		p.tools = append(p.tools, ToolSpec{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
	}
	rt := wazero.NewRuntimeWithConfig(ctx, s.r.runtimeConfig())
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return fmt.Errorf("wasi: %w", err)
	}
	var compiled wazero.CompiledModule
	err := s.r.compile(ctx, s.sum, func() (err error) {
		compiled, err = rt.CompileModule(ctx, s.wasm)
		return err
	})
	if err != nil {
		_ = rt.Close(ctx)
		return fmt.Errorf("compile: %w", err)
	}
	a.runtime, a.compiled, a.slots, a.args = rt, compiled, make(chan struct{}, s.size), toolArgs
	s.compiled()
	return nil
}

func (a *wasiABI) callExport(context.Context, string, []byte) ([]byte, error) {
	return nil, fmt.Errorf("plugin %q: a wasi command has no exports to call; use InvokeTool", a.p.name)
}

func (a *wasiABI) refreshTools(context.Context) error { return nil }

func (a *wasiABI) request(_ context.Context, export string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, errNotMCPRequest(a.p, export)
}

func (a *wasiABI) close(ctx context.Context) error {
	if a.runtime == nil {
		return nil
	}
	return a.runtime.Close(ctx)
}

// wasiCall is one run of the command: what it writes, and how much memory it took.
type wasiCall struct {
	ctx, timed     context.Context // the caller's, and with the plugin's timeout
	stdout, stderr *cappedBuffer
	watch          *memoryWatch
}

func (a *wasiABI) callTool(ctx context.Context, tool string, args []byte) (CallResult, error) {
	p := a.p
	if p.closed.Load() {
		return CallResult{}, errClosed
	}
	if int64(len(args)) > p.perms.MaxInput {
		return CallResult{}, &Fault{Plugin: p.name, Export: wasiExport, Kind: FaultInput,
			Err: fmt.Errorf("input %s exceeds max_input %s", formatSize(int64(len(args))), formatSize(p.perms.MaxInput))}
	}
	// As in invoke, the timeout starts before the wait for a slot, unless the
	// call is an admitted run's (WaitForInstance).
	start := time.Now()
	wait, cancelWait := p.instanceWait(ctx)
	defer cancelWait()
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	case <-wait.Done():
		return CallResult{}, p.noInstance(ctx, wasiExport, cap(a.slots), start, context.Cause(wait))
	}
	timed, cancel := p.callTimer(wait)
	defer cancel()
	c := &wasiCall{ctx: ctx, timed: timed,
		stdout: &cappedBuffer{max: p.perms.MaxOutput},
		stderr: &cappedBuffer{max: min(64<<10, p.perms.MaxOutput)}, // a failed exit's error text: bounded as output is
		watch:  &memoryWatch{limit: uint64(p.perms.memoryPages()) * pageSize, pool: p.memories},
	}
	return a.result(c, a.run(c, tool, args))
}

// run runs the command once, in a fresh instance, for tool with args on stdin.
func (a *wasiABI) run(c *wasiCall, tool string, args []byte) error {
	argv := a.args[tool]
	if len(argv) == 0 {
		argv = a.p.args
	}
	if len(argv) == 0 {
		argv = []string{a.p.name}
	}
	mc := a.p.moduleConfig.
		WithName("").
		WithNanosleep(func(ns int64) { sleepOrDone(ns, c.timed.Done()) }). // a fresh instance: its one call's context
		WithArgs(argv...).
		WithEnv("AGENTHOST_TOOL", tool).
		WithStdin(bytes.NewReader(args)).
		WithStdout(c.stdout).
		WithStderr(c.stderr)
	for _, kv := range callEnv(callMetaOf(c.ctx)) {
		mc = mc.WithEnv(kv[0], kv[1])
	}

	callCtx := experimental.WithMemoryAllocator(c.timed, c.watch)
	mod, err := a.runtime.InstantiateModule(callCtx, a.compiled, mc)
	// The command has returned, so nothing runs in its memory any more and it
	// can serve the next call. When instantiation failed before returning a
	// module, the memory is left to the collector: wazero may not have closed it.
	if mod != nil {
		_ = mod.Close(context.WithoutCancel(c.ctx))
		c.watch.recycle()
	}
	if err == nil && c.timed.Err() != nil {
		// The call's end cut a sleep short and the command went on to exit:
		// its answer rests on a wait that did not happen (see invoke).
		err = context.Cause(c.timed)
	}
	return err
}

// result is what a run that ended with err answers: an error result for a failed exit
// (its code and stderr), a fault for a trap or a limit, else its stdout.
func (a *wasiABI) result(c *wasiCall, err error) (CallResult, error) {
	p := a.p
	var exit *sys.ExitError
	failedExit := errors.As(err, &exit) && exit.ExitCode() != 0 && c.ctx.Err() == nil && c.timed.Err() == nil && !c.watch.exceeded.Load()
	if s := streamText(c.stderr); s != "" && !failedExit { // a failed exit's stderr is its error text
		p.notifyLog(c.ctx, "debug", "stderr", s)
	}
	if failedExit {
		msg := fmt.Sprintf("exited with code %d", exit.ExitCode())
		if s := strings.TrimSpace(c.stderr.String()); s != "" {
			msg += ": " + s
		}
		return CallResult{Content: []Content{{Type: "text", Text: msg}}, IsError: true}, nil
	}
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
		return CallResult{}, p.classify(c.ctx, c.timed, &callState{}, c.watch, wasiExport, err, false)
	}
	if c.stdout.total > c.stdout.max {
		return CallResult{}, &Fault{Plugin: p.name, Export: wasiExport, Kind: FaultOutput,
			Err: fmt.Errorf("output %s exceeds max_output %s", formatSize(c.stdout.total), formatSize(c.stdout.max))}
	}
	return parseCallResult(p, wasiExport, c.stdout.Bytes(), true)
}

// cappedBuffer keeps at most max bytes and counts the rest, so a flood of
// output costs the host no memory but is still reported with its size.
type cappedBuffer struct {
	bytes.Buffer
	max   int64
	total int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.total += int64(len(p))
	if room := b.max - int64(b.Len()); room > 0 {
		b.Buffer.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}

// callEnv is the call's _meta (WithCallMeta) as environment variables: a WASI command
// has no request envelope to carry it, and a tool with side effects needs the call id
// to recognise a call it already served (tool calls are at least once, plugins/sdk/ABI.md).
// Each string under "agenthost/" becomes AGENTHOST_ plus its upper-cased rest
// ("agenthost/call_id" → AGENTHOST_CALL_ID), sorted so every call sees one order. A
// name that is not [a-z0-9_], a value with a NUL (which an environment cannot hold)
// and "tool" (AGENTHOST_TOOL is the sandbox's own) are left out.
func callEnv(meta map[string]any) [][2]string {
	var env [][2]string
	for k, v := range meta {
		name, ok := strings.CutPrefix(k, "agenthost/")
		s, isString := v.(string)
		if !ok || !isString || name == "" || name == "tool" || strings.ContainsRune(s, 0) ||
			strings.IndexFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }) >= 0 {
			continue
		}
		env = append(env, [2]string{"AGENTHOST_" + strings.ToUpper(name), s})
	}
	slices.SortFunc(env, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return env
}
