package fake

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/agenthost/agenthost/loop"
)

// AddSchema is the input schema of the "add" tool on both sides of a comparison.
const AddSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// AddArgs are the arguments of the "add" tool.
type AddArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// Add is the tool's body, shared by the agenthost and eino sides: decode the arguments,
// add, format.
func Add(arguments string) (string, error) {
	var in AddArgs
	if err := json.Unmarshal([]byte(arguments), &in); err != nil {
		return "", err
	}
	return strconv.FormatFloat(in.A+in.B, 'g', -1, 64), nil
}

// AddTool is Add as a native Go loop.Tool.
func AddTool() loop.Tool {
	return loop.FuncTool{
		ToolSpec: loop.ToolSpec{Name: "add", Description: "Add two numbers", InputSchema: json.RawMessage(AddSchema)},
		Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			out, err := Add(c.Arguments)
			if err != nil {
				return loop.ErrorResult(err.Error()), nil
			}
			return loop.TextResult(out), nil
		},
	}
}
