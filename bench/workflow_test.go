package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/workflow"
)

// workflowSteps is how many tool steps one op of BenchmarkWorkflowStep makes.
const workflowSteps = 8

// BenchmarkWorkflowStep is the workflow step row: what the workflow engine adds to a tool
// call. One op is workflowSteps calls of the "add" tool (bench/fake) through the one tool
// pipeline (loop.Agent.DirectCall), each in a session of its own:
//
//   - direct: the calls made one after the other, as `plugins call` or an MCP client
//     makes them;
//   - workflow: one run of a workflow of that many tool steps, each depending on the one
//     before (workflow.Engine with workflow.AgentExecutor): the engine's records and its
//     run's lease on top of the same calls.
//
// On the SQLite store (a file in a temporary directory) and on the memory store.
func BenchmarkWorkflowStep(b *testing.B) {
	steps := make([]workflow.Step, workflowSteps)
	for i := range steps {
		steps[i] = workflow.Step{ID: fmt.Sprintf("s%d", i), Tool: "add", Arguments: map[string]any{"a": i, "b": 3}}
		if i > 0 {
			steps[i].DependsOn = []string{steps[i-1].ID}
		}
	}
	w, err := workflow.Compile("bench", workflow.Definition{Steps: steps})
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []string{"sqlite", "memory"} {
		open := func(b *testing.B) loop.SessionStore {
			if kind == "memory" {
				return loop.NewMemoryStore()
			}
			s, err := store.OpenSQLite(filepath.Join(b.TempDir(), "sessions.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}
		b.Run(kind+"/direct", func(b *testing.B) {
			a := workflowAgent(b, open(b))
			ctx := context.Background()
			fake.WithCPU(b, func() {
				for b.Loop() {
					for i := range workflowSteps {
						res, run := a.DirectCall(ctx, loop.CallInput{Call: loop.ToolCall{Name: "add", Arguments: fmt.Sprintf(`{"a":%d,"b":3}`, i)}}, nil)
						if run.Status != loop.StatusCompleted || res.IsError {
							b.Fatalf("call: %+v %+v", res, run)
						}
					}
				}
			})
		})
		b.Run(kind+"/workflow", func(b *testing.B) {
			st := open(b)
			e := &workflow.Engine{Store: st, Exec: workflow.AgentExecutor{Agent: workflowAgent(b, st)}}
			ctx := context.Background()
			fake.WithCPU(b, func() {
				for b.Loop() {
					res, err := e.Run(ctx, w, workflow.RunInput{}, nil)
					if err != nil || res.Record.Status != workflow.RunCompleted {
						b.Fatalf("run: %v %+v", err, res.Record)
					}
				}
			})
		})
	}
}

// workflowAgent is fake.Agent with no model (the rows make tool calls only).
func workflowAgent(b *testing.B, st loop.SessionStore) *loop.Agent {
	a, err := fake.Agent(fake.Model{}, st)
	if err != nil {
		b.Fatal(err)
	}
	return a
}
