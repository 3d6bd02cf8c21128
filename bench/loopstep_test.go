package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/store"
)

// BenchmarkLoopStep is the loop step row. One op is a run with one ReAct step: a model
// call that asks for the "add" tool, the tool call (arguments validated against its
// schema), and the model call that answers; events emitted and handed to the store. The
// model and tool cost nothing (bench/fake), so the figure is the loop's own overhead plus
// what the row adds:
//
//   - in-process: fake.Model, a store that keeps nothing (loop.BenchmarkStep's setup).
//   - provider-subprocess: the scripted provider adapter as a child process (gRPC on a
//     Unix socket in a private directory, no TLS: providers/tls.go; the adapter on one
//     thread: providers.Serve), playing bench/testdata/step.json, adapted by the host's
//     loop.Model (host.NewProviderModel): both model calls cross the process boundary.
//   - sqlite: fake.Model with the SQLite session store (WAL, group commit) in a
//     temporary directory: every entry and the run record are written, once per step
//     (rule L21): four commits a run, the lease taken with the first (loop.ClaimAppender).
func BenchmarkLoopStep(b *testing.B) {
	ctx := context.Background()
	b.Run("in-process", func(b *testing.B) {
		benchRuns(b, fake.Model{}, fake.DiscardStore{})
	})
	b.Run("provider-subprocess", func(b *testing.B) {
		c, err := providers.Start(ctx, providers.ClientConfig{Name: "scripted", Command: fx.scripted,
			Options: map[string]string{"script": mustAbs(b, "testdata/step.json")}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchRuns(b, host.NewProviderModel(c, "scripted"), fake.DiscardStore{})
	})
	b.Run("sqlite", func(b *testing.B) {
		s, err := store.OpenSQLite(filepath.Join(b.TempDir(), "sessions.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchRuns(b, fake.Model{}, s)
	})
}

// benchRuns times one-step runs, each in a new session.
func benchRuns(b *testing.B, m loop.Model, s loop.SessionStore) {
	a, err := fake.Agent(m, s)
	if err != nil {
		b.Fatal(err)
	}
	in := loop.RunInput{Messages: []loop.Message{loop.UserMessage("2+3?")}}
	ctx := context.Background()
	events := 0
	fake.WithCPU(b, func() {
		for b.Loop() {
			res, err := a.RunWith(ctx, in, func(loop.Event) { events++ })
			if err != nil || res.Final == nil || res.Final.Text() != fake.Answer {
				b.Fatalf("run: %v %+v", err, res)
			}
		}
	})
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

func mustAbs(b *testing.B, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		b.Fatal(err)
	}
	return abs
}
