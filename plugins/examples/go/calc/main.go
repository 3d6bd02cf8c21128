//go:build wasip1

// Command calc is an example tool plugin (mcp ABI): it evaluates arithmetic
// expressions with + - * /, parentheses, decimals and unary minus.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o calc.wasm .
package main

import (
	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
)

func main() {}

type calcArgs struct {
	Expression string `json:"expression" description:"arithmetic with + - * / ( ) and decimals, e.g. -(1.5+2)*4"`
}

func init() {
	sdk.AddTool("calc", "Evaluate an arithmetic expression (+ - * / parentheses, decimals, unary minus).",
		func(a calcArgs) (sdk.CallToolResult, error) {
			v, err := evaluate(a.Expression)
			if err != nil {
				return sdk.ErrorText(err.Error()), nil
			}
			return sdk.Text(formatNumber(v)), nil
		})
}
