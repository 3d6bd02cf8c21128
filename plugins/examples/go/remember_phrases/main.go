//go:build wasip1

// Command remember_phrases is an example memory plugin (kind "memory"): extract keeps,
// after each run of a named user, what the user said in so many words — "remember that
// …" becomes a fact, "I prefer …" and "always …" a preference — unless the user's
// memory already holds it; rank orders the memories a search found by how many of the
// query's words they share, newer first among equals.
package main

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/memory"
)

func main() {}

var (
	factRe = regexp.MustCompile(`(?i)\bremember that\s+([^.!?\n]{3,300})`)
	prefRe = regexp.MustCompile(`(?i)\b(I prefer\s+[^.!?\n]{3,300}|always\s+[^.!?\n]{3,300})`)
)

func init() {
	sdk.OnExtract(func(in sdk.ExtractInput) (sdk.ExtractOutput, error) {
		known := map[string]bool{}
		for _, k := range in.Known {
			known[strings.ToLower(k.Text)] = true
		}
		out := sdk.ExtractOutput{Memories: []sdk.NewMemory{}}
		add := func(text, kind string) {
			text = strings.TrimSpace(text)
			if text == "" || known[strings.ToLower(text)] {
				return
			}
			known[strings.ToLower(text)] = true
			out.Memories = append(out.Memories, sdk.NewMemory{Text: text, Kind: kind, Metadata: map[string]string{"by": "remember_phrases"}})
		}
		for _, m := range in.Messages {
			if m.Role != "user" {
				continue
			}
			text := ""
			for _, p := range m.Content {
				text += p.Text
			}
			for _, f := range factRe.FindAllStringSubmatch(text, -1) {
				add(f[1], "fact")
			}
			for _, p := range prefRe.FindAllStringSubmatch(text, -1) {
				add(p[1], "preference")
			}
		}
		return out, nil
	})
	sdk.OnRank(func(in sdk.RankInput) (sdk.RankOutput, error) {
		q := words(in.Query)
		type scored struct {
			id      string
			n       int
			created string
		}
		var all []scored
		for _, c := range in.Candidates {
			n := 0
			for _, w := range words(c.Text) {
				if slices.Contains(q, w) {
					n++
				}
			}
			all = append(all, scored{c.ID, n, c.Created})
		}
		slices.SortStableFunc(all, func(a, b scored) int {
			if a.n != b.n {
				return b.n - a.n
			}
			return strings.Compare(b.created, a.created)
		})
		out := sdk.RankOutput{IDs: []string{}}
		for _, s := range all {
			if len(out.IDs) == in.Limit {
				break
			}
			out.IDs = append(out.IDs, s.id)
		}
		return out, nil
	})
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}
