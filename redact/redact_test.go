package redact

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

func mustNew(t *testing.T, c Config) *Redactor {
	t.Helper()
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Each built-in kind is found and replaced by its name; numbers that fail the card's
// Luhn check or the IBAN's mod-97 check, and ordinary numbers, dates and versions, are
// left alone.
func TestRedactFindsEachKindAndLeavesLookalikes(t *testing.T) {
	r := mustNew(t, Config{})
	for in, want := range map[string]string{
		"mail ada@example.com now":                          "mail [email] now",
		"a.b+tag@mail.co.uk, x@y.io":                        "[email], [email]",
		"card 4111 1111 1111 1111 ok":                       "card [card] ok",
		"card 4111-1111-1111-1111":                          "card [card]",
		"not a card 4111 1111 1111 1112":                    "not a card 4111 1111 1111 1112",
		"iban DE89 3704 0044 0532 0130 00.":                 "iban [iban].",
		"iban GB82WEST12345698765432":                       "iban [iban]",
		"bad iban DE00 3704 0044 0532 0130 00":              "bad iban DE00 3704 0044 0532 0130 00",
		"call +44 20 7946 0958 or (555) 123-4567":           "call [phone] or [phone]",
		"key sk-proj-abcdefghijklmnopqrstuvwx1234 there":    "key [api_key] there",
		"aws AKIAIOSFODNN7EXAMPLE":                          "aws [api_key]",
		"version 1.2.3, 2026-11-23, 42 apples, order 12345": "version 1.2.3, 2026-11-23, 42 apples, order 12345",
	} {
		if got, _ := r.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// A guardrail check at a configured stage answers redact with the count per kind; at
// other stages, or with nothing found, allow. Only the configured kinds run, and the
// manifest's patterns add their own.
func TestRedactAsAGuardrailAtItsStages(t *testing.T) {
	r := mustNew(t, Config{Stages: []string{"input", "tool_result"}, Kinds: []string{"email"},
		Patterns: []Pattern{{Name: "ticket", Regex: `TCK-[0-9]+`}}})
	res, err := r.Check(context.Background(), loop.GuardInput{Stage: loop.StageInput, Content: "ada@example.com, bob@example.com re TCK-42, card 4111111111111111"})
	if err != nil || res.Action != loop.GuardRedact || res.Content != "[email], [email] re [ticket], card 4111111111111111" ||
		res.Reason != "redacted 2 email, 1 ticket" {
		t.Fatalf("input: %+v %v", res, err)
	}
	if res, _ := r.Check(context.Background(), loop.GuardInput{Stage: loop.StageOutput, Content: "ada@example.com"}); res.Action != loop.GuardAllow {
		t.Fatalf("output (not configured): %+v", res)
	}
	if res, _ := r.Check(context.Background(), loop.GuardInput{Stage: loop.StageToolResult, Content: "nothing here"}); res.Action != loop.GuardAllow {
		t.Fatalf("nothing to redact: %+v", res)
	}
}

// What the manifest may get wrong is refused with the key; hostile text (huge, invalid
// UTF-8, JSON arguments) is handled in linear time and stays valid JSON where it was.
func TestRedactRefusesBadConfigAndHandlesHostileText(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Stages: []string{"inputs"}}, `redact.stages: unknown stage "inputs"`},
		{Config{Kinds: []string{"ssn"}}, `redact.kinds: unknown kind "ssn"`},
		{Config{Patterns: []Pattern{{Name: "x", Regex: "("}}}, `redact.patterns[0] (x): regex "("`},
		{Config{Patterns: []Pattern{{Name: "x", Regex: "a*"}}}, `matches empty text`},
		{Config{Patterns: []Pattern{{Name: "", Regex: "a"}}}, `a name is required`},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
	r := mustNew(t, Config{})
	huge := strings.Repeat("1 2 3 4 ", 1<<17) + "ada@example.com"
	if got, counts := r.Redact(huge); !strings.HasSuffix(got, "[email]") || counts["email"] != 1 {
		t.Fatalf("huge text: %d emails, tail %q", counts["email"], got[len(got)-20:])
	}
	if got, _ := r.Redact("\xff\xfe ada@example.com \xff"); got != "\xff\xfe [email] \xff" {
		t.Fatalf("invalid UTF-8: %q", got)
	}
	res, _ := r.Check(context.Background(), loop.GuardInput{Stage: loop.StageToolArgs,
		Content: `{"to":"ada@example.com","n":4111111111111111,"cc":["x <b@c.io>"],"q":"a<b"}`})
	if res.Action != loop.GuardRedact || res.Content != `{"cc":["x <[email]>"],"n":4111111111111111,"q":"a<b","to":"[email]"}` {
		t.Fatalf("tool args: %+v", res)
	}
	if res, _ := r.Check(context.Background(), loop.GuardInput{Stage: loop.StageToolResult, Content: `not json ada@example.com`}); res.Content != "not json [email]" {
		t.Fatalf("a tool result that is not JSON: %+v", res)
	}
}
