package redact

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// Kinds are the built-in detectors, in the order they run (cards and IBANs before
// phone numbers, whose pattern would take their digits).
var Kinds = []string{"api_key", "email", "iban", "card", "phone"}

// Pattern is a detector of the manifest's own: text matching Regex becomes "[Name]".
type Pattern struct {
	Name  string `toml:"name"`
	Regex string `toml:"regex"`
}

// Config is [redact].
type Config struct {
	// Stages are where it runs: input, tool_args, tool_result, output (the loop's
	// guardrail stages), store (every entry a run stores: messages, events, compactions)
	// and telemetry (captured span content); default all.
	Stages []string `toml:"stages"`
	// Kinds are the built-in detectors it uses (default all of Kinds).
	Kinds []string `toml:"kinds"`
	// Patterns are more detectors.
	Patterns []Pattern `toml:"patterns"`
}

type detector struct {
	kind  string
	re    *regexp.Regexp
	valid func(match string) bool // nil: every match
}

// builtin is compiled on first use, not at package init.
var builtin = sync.OnceValue(func() map[string]detector {
	return map[string]detector{
		"api_key": {kind: "api_key", re: regexp.MustCompile(`\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})\b`)},
		"email":   {kind: "email", re: regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`)},
		"iban":    {kind: "iban", re: regexp.MustCompile(`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b`), valid: ibanValid},
		"card":    {kind: "card", re: regexp.MustCompile(`\b[0-9](?:[ -]?[0-9]){12,18}\b`), valid: luhnValid},
		// International numbers (+CC …), and North American ones written (555) 123-4567 or
		// 555-123-4567: a date or a version is neither.
		"phone": {kind: "phone", re: regexp.MustCompile(`\+[0-9]{1,3}(?:[ .-]?\(?[0-9]{1,4}\)?){2,5}\b|\([0-9]{3}\) ?[0-9]{3}[-. ][0-9]{4}\b|\b[0-9]{3}[-.][0-9]{3}[-.][0-9]{4}\b`)},
	}
})

// Redactor is the guardrail.
type Redactor struct {
	stages    map[loop.Stage]bool
	detectors []detector
	custom    bool // the manifest has patterns of its own (a Stream holds back StreamWindow)
}

// Stages beyond the loop's guardrail stages: what a run stores, and what telemetry exports.
const (
	StageStore     loop.Stage = "store"
	StageTelemetry loop.Stage = "telemetry"
)

var allStages = []string{string(loop.StageInput), string(loop.StageToolArgs), string(loop.StageToolResult), string(loop.StageOutput),
	string(StageStore), string(StageTelemetry)}

// Has reports whether the redactor runs at a stage.
func (r *Redactor) Has(s loop.Stage) bool { return r.stages[s] }

// New checks c and builds the guardrail; errors name the key at fault.
func New(c Config) (*Redactor, error) {
	r := &Redactor{stages: map[loop.Stage]bool{}}
	stages := c.Stages
	if len(stages) == 0 {
		stages = allStages
	}
	for _, s := range stages {
		if !slices.Contains(allStages, s) {
			return nil, fmt.Errorf("redact.stages: unknown stage %q (want %s)", s, strings.Join(allStages, ", "))
		}
		r.stages[loop.Stage(s)] = true
	}
	kinds := c.Kinds
	if kinds == nil {
		kinds = Kinds
	}
	for _, k := range Kinds { // in detection order, whatever order the manifest gives
		if slices.Contains(kinds, k) {
			r.detectors = append(r.detectors, builtin()[k])
		}
	}
	for _, k := range kinds {
		if _, ok := builtin()[k]; !ok {
			return nil, fmt.Errorf("redact.kinds: unknown kind %q (want %s)", k, strings.Join(Kinds, ", "))
		}
	}
	for i, p := range c.Patterns {
		if p.Name == "" || strings.ContainsAny(p.Name, "[]") {
			return nil, fmt.Errorf("redact.patterns[%d]: a name is required, without brackets", i)
		}
		re, err := regexp.Compile(p.Regex)
		if err != nil || p.Regex == "" {
			return nil, fmt.Errorf("redact.patterns[%d] (%s): regex %q: %v", i, p.Name, p.Regex, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redact.patterns[%d] (%s): regex %q matches empty text", i, p.Name, p.Regex)
		}
		r.detectors = append(r.detectors, detector{kind: p.Name, re: re})
		r.custom = true
	}
	return r, nil
}

// Name is the guardrail's name in events.
func (r *Redactor) Name() string { return "redact" }

// Check redacts in.Content at the configured stages.
func (r *Redactor) Check(_ context.Context, in loop.GuardInput) (loop.GuardResult, error) {
	if !r.stages[in.Stage] {
		return loop.GuardResult{Action: loop.GuardAllow}, nil
	}
	text, counts := r.redactContent(in.Stage, in.Content)
	if len(counts) == 0 {
		return loop.GuardResult{Action: loop.GuardAllow}, nil
	}
	var parts []string
	for _, d := range r.detectors {
		if n := counts[d.kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, d.kind))
			delete(counts, d.kind)
		}
	}
	return loop.GuardResult{Action: loop.GuardRedact, Content: text, Reason: "redacted " + strings.Join(parts, ", ")}, nil
}

// Redact replaces what the detectors find and counts it by kind. The detectors match the
// text's normal form (normalize.go); what is replaced is each match's original span.
func (r *Redactor) Redact(text string) (string, map[string]int) {
	counts := map[string]int{}
	t := normalize(text)
	return t.replace(text, r.find(t.s), len(t.s), counts), counts
}

// span is a detector's match in a normal form.
type span struct {
	start, end int
	kind       string
}

// find returns the detectors' matches in s by position. Detectors run in order, and a
// later one does not see what an earlier one took (it is masked, as the "[kind]" that
// replaces it would be).
func (r *Redactor) find(s string) []span {
	var spans []span
	var masked []byte
	cur := s
	for _, d := range r.detectors {
		found := false
		for _, l := range d.re.FindAllStringIndex(cur, -1) {
			if d.valid != nil && !d.valid(cur[l[0]:l[1]]) {
				continue
			}
			if masked == nil {
				masked = []byte(s)
			}
			for i := l[0]; i < l[1]; i++ {
				masked[i] = 0
			}
			spans = append(spans, span{l[0], l[1], d.kind})
			found = true
		}
		if found {
			cur = string(masked)
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	return spans
}

// replace writes text up to normal byte upto with the spans that end by then replaced
// by their kinds, counting them.
func (t normText) replace(text string, spans []span, upto int, counts map[string]int) string {
	stop := t.origStart(upto)
	if len(spans) == 0 {
		return text[:stop]
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp.end > upto {
			break
		}
		from, to := max(t.origStart(sp.start), at), t.origEnd(sp.end)
		counts[sp.kind]++
		if to <= at { // within a span already replaced (one character the normal form split)
			continue
		}
		b.WriteString(text[at:from])
		b.WriteString("[" + sp.kind + "]")
		at = to
	}
	b.WriteString(text[at:max(at, stop)])
	return b.String()
}

// luhnValid reports whether the digits of s pass the Luhn check (payment cards).
func luhnValid(s string) bool {
	sum, n, double := 0, 0, false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum, n, double = sum+d, n+1, !double
	}
	return n >= 13 && sum%10 == 0
}

// ibanValid reports whether s (spaces allowed) passes the IBAN mod-97 check.
func ibanValid(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	rearranged := s[4:] + s[:4]
	rem := 0
	for i := 0; i < len(rearranged); i++ {
		c := rearranged[i]
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}
