//go:build wasip1

// Command text is an example tool plugin (mcp ABI) with three text tools:
// word_count, regex_extract and json_query. Pure computation: it needs no
// permission.
package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
)

func main() {}

type countArgs struct {
	Text string `json:"text" description:"the text to count"`
}

type extractArgs struct {
	Text    string `json:"text" description:"the text to search"`
	Pattern string `json:"pattern" description:"a Go (RE2) regular expression"`
	Group   int    `json:"group,omitempty" description:"capture group to return (0 = whole match)"`
}

type queryArgs struct {
	JSON string `json:"json" description:"a JSON document"`
	Path string `json:"path" description:"dot path with indexes, e.g. items[0].name or items.0.name; empty = the whole document"`
}

func init() {
	sdk.AddTool("word_count", "Count the words, lines and characters of a text.", func(a countArgs) (sdk.CallToolResult, error) {
		lines := strings.Count(a.Text, "\n")
		if a.Text != "" && !strings.HasSuffix(a.Text, "\n") {
			lines++
		}
		out, _ := json.Marshal(map[string]int{
			"words": len(strings.Fields(a.Text)), "lines": lines, "characters": utf8.RuneCountInString(a.Text)})
		return sdk.Text(string(out)), nil
	})
	sdk.AddTool("regex_extract", "Return every match of a regular expression (or of one capture group) as a JSON array.", func(a extractArgs) (sdk.CallToolResult, error) {
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return sdk.ErrorText("invalid pattern: " + err.Error()), nil
		}
		if a.Group < 0 || a.Group > re.NumSubexp() {
			return sdk.ErrorText(fmt.Sprintf("group %d out of range: the pattern has %d groups", a.Group, re.NumSubexp())), nil
		}
		matches := []string{}
		for _, m := range re.FindAllStringSubmatch(a.Text, -1) {
			matches = append(matches, m[a.Group])
			sdk.StreamResult(m[a.Group] + "\n") // shown live in a run; the array below is the result
		}
		out, _ := json.Marshal(matches)
		return sdk.Text(string(out)), nil
	})
	sdk.AddTool("json_query", "Select a value of a JSON document by path; returns it as compact JSON.", func(a queryArgs) (sdk.CallToolResult, error) {
		v, err := query(a.JSON, a.Path)
		if err != nil {
			return sdk.ErrorText(err.Error()), nil
		}
		out, _ := json.Marshal(v)
		return sdk.Text(string(out)), nil
	})
}
