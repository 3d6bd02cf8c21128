package providers_test

import (
	"context"
	"io"
	"testing"

	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/scripted"
)

// BenchmarkRoundTrip measures one model call of the scripted provider (five
// events: reasoning, text, tool call, usage, finish; no delays) through the
// adapter subprocess (gRPC over AutoMTLS) and in-process, in the same run.
func BenchmarkRoundTrip(b *testing.B) {
	req := &providers.ChatRequest{Messages: []*providers.Message{userMsg("what is 1+1?")}, Tools: []*providers.Tool{calcTool}}
	ctx := context.Background()

	b.Run("subprocess", func(b *testing.B) {
		c, err := providers.Start(ctx, providers.ClientConfig{Name: "scripted", Command: scriptedBin, Options: map[string]string{"script": "testdata/bench.json"}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
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
