package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// fixedModel plays a two-turn conversation: it asks for the multiply tool, then answers
// with the tool's result.
type fixedModel struct{}

func (fixedModel) Stream(_ context.Context, req loop.Request) (loop.Stream, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == loop.RoleUser {
		return &deltas{list: []loop.Delta{{Seq: 1, Kind: loop.DeltaToolCall, ToolCall: &loop.ToolCallDelta{
			ID: "c1", Name: "multiply", Arguments: `{"a":17,"b":23}`}}}}, nil
	}
	return &deltas{list: []loop.Delta{{Seq: 1, Kind: loop.DeltaText, Text: "17 × 23 = " + last.Text()}}}, nil
}

type deltas struct{ list []loop.Delta }

func (d *deltas) Recv() (loop.Delta, error) {
	if len(d.list) == 0 {
		return loop.Delta{}, io.EOF
	}
	x := d.list[0]
	d.list = d.list[1:]
	return x, nil
}
func (d *deltas) Close() error { return nil }

// ExampleAgent_RunWith runs one tool step and prints the transcript from the events.
func ExampleAgent_RunWith() {
	multiply := loop.FuncTool{
		ToolSpec: loop.ToolSpec{Name: "multiply", Description: "Multiply two integers",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)},
		Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
				return loop.ToolResult{}, err
			}
			return loop.TextResult(strconv.Itoa(in.A * in.B)), nil
		},
	}
	tools, _ := loop.NewToolSet(multiply)
	agent, _ := loop.New(loop.Config{Name: "demo", SystemPrompt: "You multiply.", Model: fixedModel{}, Tools: tools})

	res, _ := agent.RunWith(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("What is 17 × 23?")}},
		func(e loop.Event) {
			switch d := e.Data.(type) {
			case *loop.StatusData:
				fmt.Println("  status", d.State)
			case *loop.ToolCallData:
				fmt.Printf("→ %s %s\n", d.Name, d.Arguments)
			case *loop.ToolResultData:
				fmt.Printf("← %s\n", d.Content)
			case *loop.FinalData:
				fmt.Println("final:", d.Text)
			}
		})
	fmt.Println(res.Status, res.Reason, strings.Count(res.Final.Text(), "391"))
	// Output:
	//   status preparing
	//   status model_running
	//   status tool_running
	// → multiply {"a":17,"b":23}
	// ← 391
	//   status model_running
	// final: 17 × 23 = 391
	//   status completed
	// completed end_turn 1
}

// ExampleRunInput_clientTools shows a client-side tool (L16): the first run stops with
// the call pending, the caller runs it, and the second run supplies its result.
func ExampleRunInput_clientTools() {
	model := looptest.NewModel(
		looptest.Turn{Calls: []loop.ToolCall{{ID: "c1", Name: "pick_color", Arguments: `{}`}}},
		looptest.Turn{Text: "You picked teal."},
	)
	agent, _ := loop.New(loop.Config{Model: model})
	client := []loop.ToolSpec{{Name: "pick_color", Description: "Ask the user for a colour"}}

	res, _ := agent.Run(context.Background(), loop.RunInput{SessionID: "s", ClientTools: client,
		Messages: []loop.Message{loop.UserMessage("Pick a colour for me to use.")}})
	fmt.Println(res.Status, res.Reason, res.PendingCalls[0].Name)

	answer := loop.Message{Role: loop.RoleTool, ToolCallID: res.PendingCalls[0].ID, Content: []loop.Part{loop.TextPart("teal")}}
	res, _ = agent.Run(context.Background(), loop.RunInput{SessionID: "s", ClientTools: client, Messages: []loop.Message{answer}})
	fmt.Println(res.Status, res.Reason, res.Final.Text())
	// Output:
	// interrupted client_tool_call pick_color
	// completed end_turn You picked teal.
}

// ExampleAgent_Events ranges over a run's events.
func ExampleAgent_Events() {
	agent, _ := loop.New(loop.Config{Model: looptest.NewModel(looptest.Turn{Text: "The answer ", Stop: "max_tokens"})})
	for e, err := range agent.Events(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("q")}}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if d, ok := e.Data.(*loop.RunFinishedData); ok {
			fmt.Println(e.Seq, d.Status, d.Reason, d.StopReason)
		}
	}
	// Output:
	// 11 incomplete max_tokens max_tokens
}
