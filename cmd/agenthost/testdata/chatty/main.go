//go:build wasip1

// Command chatty is the author-experience tests' plugin: its tool logs at every level,
// reports progress and writes to stdout and stderr, as a plugin being debugged does.
package main

import (
	"fmt"
	"os"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
)

func main() {}

type args struct {
	Steps int `json:"steps" description:"progress steps to report"`
}

func init() {
	sdk.AddTool("chatty", "Say everything, everywhere.", func(a args) (sdk.CallToolResult, error) {
		for _, level := range []string{"debug", "info", "notice", "warning", "error"} {
			sdk.Log(level, "a "+level+" line")
		}
		for i := 1; i <= a.Steps; i++ {
			sdk.Progress(float64(i), float64(a.Steps), fmt.Sprintf("step %d", i))
		}
		fmt.Println("printed to stdout")
		fmt.Fprintln(os.Stderr, "printed to stderr")
		return sdk.Text("said everything"), nil
	})
}
