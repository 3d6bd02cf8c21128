package providers_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/scripted"
)

// BenchmarkRoundTrip measures one model call of the scripted provider (five
// events: reasoning, text, tool call, usage, finish; no delays) through the
// adapter subprocess (gRPC on a Unix socket in a private directory, no TLS; the call
// on a pooled Session stream), through an adapter without Session (a Stream RPC per
// call, as before Session), and in-process, in the same run; subprocess-info is one
// unary RPC on the same connection. With AGENTHOST_PROVIDER_CPUPROFILE set, the subprocess's adapter writes its CPU
// profile there (-cpuprofile is the host's side).
func BenchmarkRoundTrip(b *testing.B) {
	req := &providers.ChatRequest{Messages: []*providers.Message{userMsg("what is 1+1?")}, Tools: []*providers.Tool{calcTool}}
	ctx := context.Background()

	b.Run("subprocess", func(b *testing.B) {
		c, err := providers.Start(ctx, providers.ClientConfig{Name: "scripted", Command: scriptedBin,
			Env: []string{providers.CPUProfileEnv}, Options: map[string]string{"script": "testdata/bench.json"}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchCalls(b, c, req)
	})

	// The same model behind an adapter that does not serve Session (sessionhelper_test.go):
	// every call is a Stream RPC of its own, as every call was before Session.
	b.Run("subprocess-stream-rpc", func(b *testing.B) {
		c, err := providers.Start(ctx, providers.ClientConfig{Name: "stream-only", Command: os.Args[0],
			Env: []string{sessionHelperEnv + "=stream-only"}, Options: map[string]string{"script": "testdata/bench.json"}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchCalls(b, c, req)
	})

	// The floor under a call: one unary Info RPC on the same connection, no stream.
	b.Run("subprocess-info", func(b *testing.B) {
		c, err := providers.Start(ctx, providers.ClientConfig{Name: "scripted", Command: scriptedBin})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Info(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("in-process", func(b *testing.B) {
		f, err := scripted.Load("testdata/bench.json")
		if err != nil {
			b.Fatal(err)
		}
		m := scripted.New(f)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			n := 0
			err := m.Stream(ctx, req, func(*providers.ChatEvent) error { n++; return nil })
			if err != nil {
				b.Fatal(err)
			}
			if n != 5 {
				b.Fatalf("%d events, want 5", n)
			}
		}
	})
}

// benchCalls times model calls of req on c, each read to its end (five events).
func benchCalls(b *testing.B, c *providers.Client, req *providers.ChatRequest) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st, err := c.Stream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 5 {
			b.Fatalf("%d events, want 5", n)
		}
	}
}
