//go:build wasip1

// Command wasicmd is the sandbox tests' WASI-command tool: arguments JSON on
// stdin, argv from the plugin's Args, the result on stdout.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	var args struct{ Text string }
	in, _ := io.ReadAll(os.Stdin)
	if err := json.Unmarshal(in, &args); err != nil {
		fmt.Fprintln(os.Stderr, "bad arguments:", err)
		os.Exit(2)
	}
	switch args.Text {
	case "fail":
		fmt.Fprintln(os.Stderr, "asked to fail")
		os.Exit(4)
	case "spin":
		for {
		}
	case "badutf8":
		os.Stdout.Write([]byte("caf\xe9 \xff!"))
	case "badutf8err":
		os.Stderr.Write([]byte("bad \xff"))
		os.Exit(3)
	case "json":
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"content": []map[string]string{{"type": "text", "text": "structured"}},
			"isError": true,
		})
	case "whoami":
		fmt.Print(os.Getenv("AGENTHOST_TOOL"), " ", strings.Join(os.Args, " "))
	case "warn":
		fmt.Fprintln(os.Stderr, "warning: shouting")
		fmt.Print(strings.Join(os.Args[1:], " "), ": ", strings.ToUpper(args.Text))
	default:
		fmt.Print(strings.Join(os.Args[1:], " "), ": ", strings.ToUpper(args.Text))
	}
}
