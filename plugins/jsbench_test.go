package plugins

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/sandbox"
)

// greetJS is the `plugins new js` scaffold's tool.
const greetJS = `const { tool } = require("agenthost");
tool({ name: "greet", inputSchema: { type: "object", properties: { text: { type: "string" } } },
  handler: (a) => "Hello, " + a.text + "!" });
`

// BenchmarkJSTool is a call of a JavaScript tool beside the Go calc example's: "fresh"
// is a fresh pre-initialised instance each op (isolation "call": instantiate from the
// snapshot, run the bundle's top level, call, dispose), "warm" a call on a kept
// instance. Compare cpu-ns/op, the steadier figure on a shared machine.
//
//	go test -run '^$' -bench BenchmarkJSTool -count 3 ./plugins/
func BenchmarkJSTool(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name, isolation string
	}{{"js-fresh", sandbox.IsolationCall}, {"js-warm", "pooled"}, {"go-calc-fresh", sandbox.IsolationCall}, {"go-calc-warm", "pooled"}} {
		b.Run(c.name, func(b *testing.B) {
			perms := sandbox.Permissions{Isolation: c.isolation}
			var p *sandbox.Plugin
			tool, args, want := "greet", []byte(`{"text":"bench"}`), "Hello, bench!"
			if c.name[:2] == "js" {
				p = mustLoadJS(b, "greet.js", greetJS, sandbox.Config{Permissions: perms})
			} else {
				p = loadExample(b, "go/calc", sandbox.Config{Preinit: sandbox.PreinitOn, Permissions: perms})
				tool, args, want = "calc", []byte(`{"expression":"-(1.5+2)*4/(3-1)"}`), "-7"
			}
			if res, err := p.InvokeTool(ctx, tool, args); err != nil || res.Text() != want {
				b.Fatal(res, err)
			}
			fake.WithCPU(b, func() {
				for b.Loop() {
					if res, err := p.InvokeTool(ctx, tool, args); err != nil || res.Text() != want {
						b.Fatal(res, err)
					}
				}
			})
		})
	}
}
