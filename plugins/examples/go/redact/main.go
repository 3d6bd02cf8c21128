//go:build wasip1

// Command redact is an example guardrail (kind "guardrail", export guard):
// in tool results and the final output it replaces API-key-like secrets,
// e-mail addresses and phone numbers with [redacted secret], [redacted
// email] and [redacted phone]. Other stages, and clean content, are allowed.
package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/guardrail"
)

func main() {}

var (
	// Well-known key formats, and key=value / key: value assignments of
	// secret-sounding names (the name is kept, the value redacted).
	secretToken  = regexp.MustCompile(`\b(?:sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})`)
	secretAssign = regexp.MustCompile(`(?i)\b((?:api[_-]?key|secret|token|password|passwd)["']?\s*[:=]\s*["']?)([^\s"',;]{6,})`)
	email        = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	// A phone candidate; it counts only with 9 to 15 digits, so dates and
	// small numbers stay.
	phone = regexp.MustCompile(`\+?\(?\d[\d\s().-]{6,}\d`)
)

func init() {
	sdk.OnGuard(func(in sdk.GuardInput) (sdk.GuardResult, error) {
		if in.Stage != sdk.StageToolResult && in.Stage != sdk.StageOutput {
			return sdk.GuardResult{Action: sdk.Allow}, nil
		}
		out, counts := redact(in.Content)
		if len(counts) == 0 {
			return sdk.GuardResult{Action: sdk.Allow}, nil
		}
		return sdk.GuardResult{Action: sdk.Redact, Reason: "redacted " + strings.Join(counts, ", "), Content: out}, nil
	})
}

// redact returns the cleaned text and what it replaced, e.g. ["1 secret", "2 emails"].
func redact(s string) (string, []string) {
	var counts []string
	count := func(n int, one, many string) {
		if n == 1 {
			counts = append(counts, "1 "+one)
		} else if n > 1 {
			counts = append(counts, fmt.Sprintf("%d %s", n, many))
		}
	}
	n := 0
	s = secretToken.ReplaceAllStringFunc(s, func(string) string { n++; return "[redacted secret]" })
	s = secretAssign.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretAssign.FindStringSubmatch(m)
		if sub[2] == "[redacted" {
			return m
		}
		n++
		return sub[1] + "[redacted secret]"
	})
	count(n, "secret", "secrets")
	n = 0
	s = email.ReplaceAllStringFunc(s, func(string) string { n++; return "[redacted email]" })
	count(n, "email address", "email addresses")
	n = 0
	s = phone.ReplaceAllStringFunc(s, func(m string) string {
		digits := 0
		for _, r := range m {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if digits < 9 || digits > 15 {
			return m
		}
		n++
		return "[redacted phone]"
	})
	count(n, "phone number", "phone numbers")
	return s, counts
}
