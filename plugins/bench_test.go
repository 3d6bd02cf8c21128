package plugins

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/sandbox"
)

// exampleCase is one example with a call that exercises it.
type exampleCase struct {
	example, target, input string
	tool                   bool
	cfg                    sandbox.Config
}

// exampleCases are the fourteen examples of the benchmarks, each with a call.
func exampleCases() []exampleCase {
	host := &recordingHost{answer: "summary"}
	history := `[{"role":"user","content":[{"type":"text","text":"- [ ] a\nhi"}]},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]`
	return []exampleCase{
		{"go/calc", "calc", `{"expression":"-(1.5+2)*4/(3-1)"}`, true, sandbox.Config{}},
		{"go/text", "word_count", `{"text":"one two three four five"}`, true, sandbox.Config{}},
		{"go/files", "list_dir", `{"path":"/data"}`, true, sandbox.Config{Permissions: sandbox.Permissions{AllowedPaths: map[string]string{"ro:.": "/data"}}}},
		{"go/http_get", "http_get", `{"url":""}`, true, sandbox.Config{}},
		{"go/sliding_window", "context_build", `{"history":` + history + `,"messages":` + history + `,"budget":0,"overflow":true}`, false, sandbox.Config{}},
		{"go/token_budget", "context_build", `{"history":` + history + `,"messages":` + history + `,"budget":10,"overflow":false}`, false, sandbox.Config{}},
		{"go/summarize", "context_build", `{"history":` + history + `,"messages":` + history + `,"budget":0,"overflow":true}`, false,
			sandbox.Config{Host: host, Permissions: sandbox.Permissions{Model: true, Config: map[string]string{"keep": "1"}}}},
		{"go/todos", "before_final", `{"iteration":1,"text":"done","continuations":0,"usage":{},"history":` + history + `}`, false, sandbox.Config{}},
		{"go/budget_guard", "on_step", `{"iteration":3,"message":{"role":"assistant"},"usage":{"cost_usd":1},"tool_calls_so_far":1,"history":[]}`, false,
			sandbox.Config{Permissions: sandbox.Permissions{Config: map[string]string{"max_cost_usd": "0.5"}}}},
		{"go/redact", "guard", `{"stage":"output","content":"mail me at a@b.io or call +1 555 123 4567"}`, false, sandbox.Config{}},
		{"c/wc", "word_count", `{"text":"one two three"}`, true, sandbox.Config{Tools: []sandbox.ToolDecl{{Name: "word_count", InputSchema: textSchema}}}},
		{"rust/sha256", "sha256", `{"text":"abc"}`, true, sandbox.Config{Tools: []sandbox.ToolDecl{{Name: "sha256", InputSchema: textSchema}}}},
		{"assemblyscript/slugify", "slugify", `{"text":"Hello, World"}`, true, sandbox.Config{Tools: []sandbox.ToolDecl{{Name: "slugify", InputSchema: textSchema}}}},
		{"wat/count_vowels", "count_vowels", `{"text":"Hello, World"}`, true, sandbox.Config{Tools: []sandbox.ToolDecl{{Name: "count_vowels", InputSchema: textSchema}}}},
	}
}

// BenchmarkLoadExamples is the "many plugins" start: one op is a host start's sandbox
// work for a manifest of the fourteen examples, from a warm compilation cache (a
// directory an earlier start filled): a new Runtime on it and Load of each example
// (decode, compile or fetch, instantiate, inspect), no calls.
//
//	go test -run '^$' -bench BenchmarkLoadExamples ./plugins/
func BenchmarkLoadExamples(b *testing.B) {
	ctx := context.Background()
	cases := exampleCases()
	for i := range cases {
		cases[i].cfg.Name, cases[i].cfg.Path = cases[i].example, examplePath(b, cases[i].example)
	}
	dir := b.TempDir()
	start := func() {
		r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close(ctx)
		for _, c := range cases {
			p, err := r.Load(ctx, c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
		}
	}
	start() // fills the cache
	for b.Loop() {
		start()
	}
}

// BenchmarkLoadExamplesConcurrent is BenchmarkLoadExamples with the fourteen loads run
// at once, as host.Open runs them (sandbox.LoadAll).
func BenchmarkLoadExamplesConcurrent(b *testing.B) {
	ctx := context.Background()
	cases := exampleCases()
	cfgs := make([]sandbox.Config, len(cases))
	for i := range cases {
		cases[i].cfg.Name, cases[i].cfg.Path = cases[i].example, examplePath(b, cases[i].example)
		cfgs[i] = cases[i].cfg
	}
	dir := b.TempDir()
	start := func() {
		r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close(ctx)
		ps, _, err := r.LoadAll(ctx, cfgs)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range ps {
			defer p.Close(ctx)
		}
	}
	start() // fills the cache
	for b.Loop() {
		start()
	}
}

// BenchmarkExamples measures every example: "cold" is a fresh runtime with no
// compilation cache, Load (compile + instantiate) and the first call; "warm"
// is one more call on the loaded plugin. The numbers in
// examples/README.md come from:
//
//	go test -run '^$' -bench BenchmarkExamples -benchtime 1s ./plugins/
func BenchmarkExamples(b *testing.B) {
	for _, c := range exampleCases() {
		ctx := context.Background()
		path := examplePath(b, c.example)
		call := func(b *testing.B, p *sandbox.Plugin) {
			if c.tool {
				res, err := p.InvokeTool(ctx, c.target, []byte(c.input))
				if err != nil || (res.IsError && c.example != "go/http_get") {
					b.Fatalf("%s: %v %+v", c.example, err, res)
				}
				return
			}
			if _, err := p.CallExport(ctx, c.target, []byte(c.input)); err != nil {
				b.Fatalf("%s: %v", c.example, err)
			}
		}
		cfg := c.cfg
		cfg.Name, cfg.Path = c.example, path
		b.Run(c.example+"/cold", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{})
				if err != nil {
					b.Fatal(err)
				}
				p, err := r.Load(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				call(b, p)
				p.Close(ctx)
				r.Close(ctx)
			}
		})
		b.Run(c.example+"/warm", func(b *testing.B) {
			r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(ctx)
			p, err := r.Load(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			call(b, p)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				call(b, p)
			}
		})
	}
}

// BenchmarkFreshInstance is a call of the Go calc example on a fresh instance (isolation
// "call": one op is instantiate, call, dispose), as built and pre-initialised
// (sandbox.Config.Preinit: the snapshot instantiates where _initialize ended, so the Go
// runtime's start is not run again). Compare the two ns/op (and cpu-ns/op, the steadier
// figure on a shared machine) of one run.
//
//	go test -run '^$' -bench BenchmarkFreshInstance -count 5 ./plugins/
func BenchmarkFreshInstance(b *testing.B) {
	ctx := context.Background()
	path := examplePath(b, "go/calc")
	for _, c := range []struct {
		name    string
		preinit sandbox.PreinitMode
	}{{"built", sandbox.PreinitOff}, {"preinit", sandbox.PreinitOn}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := sandbox.NewRuntime(ctx, sandbox.RuntimeOptions{CacheDir: cacheDir})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(ctx)
			p, err := r.Load(ctx, sandbox.Config{Name: "calc", Path: path, Preinit: c.preinit,
				Permissions: sandbox.Permissions{Isolation: sandbox.IsolationCall}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			args := []byte(`{"expression":"-(1.5+2)*4/(3-1)"}`)
			fake.WithCPU(b, func() {
				for b.Loop() {
					res, err := p.InvokeTool(ctx, "calc", args)
					if err != nil || res.Text() != "-7" {
						b.Fatal(res, err)
					}
				}
			})
		})
	}
}
