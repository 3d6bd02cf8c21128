package eino

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/loop"
)

// BenchmarkReAct is the "loop step vs eino" row; see the package doc for what is equal.
func BenchmarkReAct(b *testing.B) {
	ctx := context.Background()
	b.Run("agenthost", func(b *testing.B) {
		a, err := fake.Agent(fake.Model{}, fake.DiscardStore{})
		if err != nil {
			b.Fatal(err)
		}
		in := loop.RunInput{Messages: []loop.Message{loop.UserMessage("2+3?")}}
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
	})
	agent := func(b *testing.B) *react.Agent {
		a, err := react.NewAgent(ctx, &react.AgentConfig{
			ToolCallingModel: einoModel{},
			ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{addTool{}}},
		})
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	input := func() []*schema.Message {
		return []*schema.Message{schema.SystemMessage("sys"), schema.UserMessage("2+3?")}
	}
	b.Run("eino-stream", func(b *testing.B) {
		a := agent(b)
		fake.WithCPU(b, func() {
			for b.Loop() {
				sr, err := a.Stream(ctx, input())
				if err != nil {
					b.Fatal(err)
				}
				text := ""
				for {
					m, err := sr.Recv()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					text += m.Content
				}
				sr.Close()
				if text != fake.Answer {
					b.Fatalf("final %q", text)
				}
			}
		})
	})
	b.Run("eino-generate", func(b *testing.B) {
		a := agent(b)
		fake.WithCPU(b, func() {
			for b.Loop() {
				m, err := a.Generate(ctx, input())
				if err != nil || m.Content != fake.Answer {
					b.Fatal(m, err)
				}
			}
		})
	})
}

// einoModel is fake.Model for eino: the same decision from the last message and, when
// streamed, the same three chunks (content, usage, finish).
type einoModel struct{}

func (einoModel) answer(input []*schema.Message) []*schema.Message {
	final := len(input) > 0 && input[len(input)-1].Role == schema.Tool
	usage := &schema.ResponseMeta{Usage: &schema.TokenUsage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}
	first := &schema.Message{Role: schema.Assistant}
	finish := &schema.Message{Role: schema.Assistant, ResponseMeta: &schema.ResponseMeta{FinishReason: "tool_calls"}}
	if final {
		first.Content = fake.Answer
		finish.ResponseMeta.FinishReason = "stop"
	} else {
		first.ToolCalls = []schema.ToolCall{{ID: "c1", Type: "function",
			Function: schema.FunctionCall{Name: "add", Arguments: fake.Args}}}
	}
	return []*schema.Message{first, {Role: schema.Assistant, ResponseMeta: usage}, finish}
}

func (m einoModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	return schema.ConcatMessages(m.answer(input))
}

func (m einoModel) Stream(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return schema.StreamReaderFromArray(m.answer(input)), nil
}

func (m einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// addTool is fake.Add as an eino InvokableTool.
type addTool struct{}

func (addTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "add", Desc: "Add two numbers",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"a": {Type: schema.Number, Required: true}, "b": {Type: schema.Number, Required: true}})}, nil
}

func (addTool) InvokableRun(_ context.Context, args string, _ ...tool.Option) (string, error) {
	return fake.Add(args)
}
