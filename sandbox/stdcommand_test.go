package sandbox

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// An Extism std command (a Go WASI command importing the Extism kernel, whose main
// reads the input: the go-sdk's std_command.wasm answers "hello " + input) loads as a
// tool named after the plugin and answers every call, each on a fresh instance: a Go
// command exits after main, so a reused instance would be dead by the second call.
// Such modules used to be refused as "a command whose exports cannot be called".
func TestExtismStdCommandIsAToolWithAFreshInstancePerCall(t *testing.T) {
	r := newTestRuntime(t)
	wasm := filepath.Join(fixtures.extismDir, "wasm", "std_command.wasm")
	p := load(t, r, Config{Name: "greet", Path: wasm, Permissions: Permissions{Isolation: IsolationPooled}})
	if p.ABI() != ABIExtism {
		t.Fatalf("abi %s, want extism", p.ABI())
	}
	if got := p.Tools(); len(got) != 1 || got[0].Name != "greet" {
		t.Fatalf("tools %+v, want one named greet", got)
	}
	for _, who := range []string{"ben", "ada", "ben"} {
		wantResult(t, callTool(t, p, "greet", `"`+who+`"`), false, `hello "`+who+`"`)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := `{"n":` + string(rune('0'+i)) + `}`
			res, err := p.InvokeTool(context.Background(), "greet", []byte(args))
			if err != nil || res.IsError || res.Text() != "hello "+args {
				errs <- args + ": " + res.Text()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error("concurrent call", e)
	}

	declared := load(t, r, Config{Name: "std", Path: wasm, Tools: []ToolDecl{{Name: "hello", Input: "who"}}})
	wantResult(t, callTool(t, declared, "hello", `{"who":"world"}`), false, "hello world")
}

// A declared tool of a std command that names another export is refused at load with
// what to do: before main has run, a Go command's exports trap.
func TestExtismStdCommandRefusesAToolOnAnotherExport(t *testing.T) {
	r := newTestRuntime(t)
	wasm := filepath.Join(fixtures.extismDir, "wasm", "std_command.wasm")
	_, err := r.Load(context.Background(), Config{Name: "std", Path: wasm, Tools: []ToolDecl{{Name: "greet", Export: "greet"}}})
	if err == nil || !strings.Contains(err.Error(), `tool "greet": this Go module is an Extism command (its entry is _start), so its export "greet" cannot be called`) {
		t.Fatalf("load: %v", err)
	}
}
