package plugins

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/sandbox"
)

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// wantFailure calls a tool that must fail and returns its error text.
func wantFailure(t *testing.T, p *sandbox.Plugin, tool, args string) string {
	t.Helper()
	res, err := p.InvokeTool(context.Background(), tool, []byte(args))
	if err != nil {
		t.Fatalf("CallTool(%s, %s): %v", tool, args, err)
	}
	if !res.IsError {
		t.Fatalf("%s(%s) = %q, want an error", tool, args, res.Text())
	}
	return res.Text()
}
