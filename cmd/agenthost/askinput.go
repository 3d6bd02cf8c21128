package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// AskInput asks the person at the terminal for a call's input (an MCP server's
// elicitation, loop.InputAsker): the request's message, whether to answer, then each
// field of its schema by name (an empty line leaves a field out; a number or boolean
// that does not read as one is asked again). Stdin at its end interrupts the run, as an
// unanswered approval does.
func (a *askApprover) AskInput(ctx context.Context, c loop.ToolCall, req loop.InputRequest) (loop.Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.noInput {
		return loop.Approval{}, loop.ErrApprovalPending
	}
	fmt.Fprintf(a.out, "? %s asks: %s\n  answer? [y/N] ", c.Name, req.Message)
	line, err := a.readLine(ctx, c.Name)
	if err != nil {
		return loop.Approval{}, err
	}
	if l := strings.ToLower(line); l != "y" && l != "yes" {
		return loop.Approval{Reason: "declined by the user"}, nil
	}
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(req.Schema, &schema)
	input := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		p := schema.Properties[name]
		hint := p.Type
		if len(p.Enum) > 0 {
			hint = fmt.Sprintf("one of %v", p.Enum)
		}
		for {
			fmt.Fprintf(a.out, "  %s (%s): ", cmp.Or(p.Title, name), hint)
			line, err := a.readLine(ctx, c.Name)
			if err != nil {
				return loop.Approval{}, err
			}
			if line == "" {
				break
			}
			v, ok := typed(p.Type, line)
			if ok {
				input[name] = v
				break
			}
			fmt.Fprintf(a.out, "  not a %s\n", p.Type)
		}
	}
	b, _ := json.Marshal(input)
	return loop.Approval{Approved: true, Input: b}, nil
}

// readLine reads one answer; stdin at its end interrupts the run (ErrApprovalPending).
func (a *askApprover) readLine(ctx context.Context, tool string) (string, error) {
	type reply struct {
		line string
		err  error
	}
	answer := make(chan reply, 1)
	go func() {
		line, err := a.in.ReadString('\n')
		answer <- reply{strings.TrimSpace(line), err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-answer:
		if r.line == "" && r.err != nil {
			fmt.Fprintln(a.out)
			a.noInput, a.tool = true, tool
			return "", loop.ErrApprovalPending
		}
		return r.line, nil
	}
}

// typed reads a field's answer as its schema type.
func typed(typ, s string) (any, bool) {
	switch typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return nil, false
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	case "array":
		var out []string
		for _, v := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(v))
		}
		return out, true
	}
	return s, true
}
