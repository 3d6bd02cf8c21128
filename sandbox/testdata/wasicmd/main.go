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
	case "stain":
		// Fill a fresh 4 MiB with 0xAA: what an instance leaves behind.
		b := make([]byte, 4<<20)
		for i := range b {
			b[i] = 0xAA
		}
		fmt.Print(len(b))
	case "peek":
		// Go does not clear memory it takes from memory.grow (a new memory
		// is zero), so a recycled one that was not cleared shows here.
		b := make([]byte, 4<<20)
		n := 0
		for _, c := range b {
			if c != 0 {
				n++
			}
		}
		fmt.Print(n)
	case "callenv":
		fmt.Printf("call=%s session=%s run=%s tool=%s", os.Getenv("AGENTHOST_CALL_ID"), os.Getenv("AGENTHOST_SESSION_ID"),
			os.Getenv("AGENTHOST_RUN_ID"), os.Getenv("AGENTHOST_TOOL"))
	case "whoami":
		fmt.Print(os.Getenv("AGENTHOST_TOOL"), " ", strings.Join(os.Args, " "))
	case "warn":
		fmt.Fprintln(os.Stderr, "warning: shouting")
		fmt.Print(strings.Join(os.Args[1:], " "), ": ", strings.ToUpper(args.Text))
	default:
		fmt.Print(strings.Join(os.Args[1:], " "), ": ", strings.ToUpper(args.Text))
	}
}
