package redact

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
)

// The evasions an attacker used are caught: a full-width @, a zero-width space inside an
// address, no-break spaces (three kinds) inside a card number, and more look-alikes of
// the same sort (full-width digits, a word joiner, a byte-order mark, a soft hyphen).
// What is replaced is the original span, invisible characters included; the text
// around it is left exactly as it was, non-ASCII and all.
func TestRedactNormalisesLookalikesBeforeMatching(t *testing.T) {
	r := mustNew(t, Config{})
	for in, want := range map[string]string{
		"mail bob\uff20example.org now":                        "mail [email] now",
		"mail bob\u200b@example.org now":                       "mail [email] now",
		"mail b\u200bo\u200cb@exa\u200dmple.org":               "mail [email]",
		"mail bob@example\u2060.org\ufeff!":                    "mail [email]\ufeff!",
		"card 4111\u00a01111\u00a01111\u00a01111 ok":           "card [card] ok",
		"card 4111\u202f1111\u20071111\u00a01111 ok":           "card [card] ok",
		"card \uff14\uff11\uff11\uff11 1111 1111 1111.":        "card [card].",
		"card 4111\u00ad1111\u00ad1111\u00ad1111":              "card [card]",
		"café ﬁne 4111 1111 1111 1112 ＠ no":                    "café ﬁne 4111 1111 1111 1112 ＠ no",
		"été: ada@example.com, 😀 ok":                           "été: [email], 😀 ok",
		"iban DE89\u00a03704\u00a00044\u00a00532\u00a00130 00": "iban [iban]",
	} {
		if got, _ := r.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

var streamSamples = []string{
	"Write to ada@example.com or bob\uff20example.org; the card is 4111 1111 1111 1111 and the other 4111\u00a01111\u202f1111\u20071111.",
	"Reach c\u200barol@example.net, call +44 20 7946 0958 or (555) 123-4567, IBAN DE89 3704 0044 0532 0130 00, key sk-proj-abcdefghijklmnopqrstuvwx1234.",
	"PLAIN CAPITALS AND 12 NUMBERS 2026-11-23 WITH NOTHING TO FIND, AND ORDER 12345 OK",
	"été ﬁn 😀 4111-1111-1111-1111\n\nnot a card 4111 1111 1111 1112 x@y.io",
	"日本語のテキスト、メール ada@example.com と カード ４１１１ １１１１ １１１１ １１１１。½ ㎏ 終わり",
	"ticket TCK-42 and TCK-4711 for ada@example.com",
}

// Split anywhere, a stream returns exactly what Redact returns for the whole text, and
// no piece it returns carries a match's text: the evasions split across deltas (the @
// in one, the domain in the next; a card in four pieces with no-break spaces) are
// caught too, and the text as the client assembles it is the redacted text.
func TestStreamRedactsWhateverTheSplit(t *testing.T) {
	r := mustNew(t, Config{Patterns: []Pattern{{Name: "ticket", Regex: `TCK-[0-9]+`}}})
	rng := rand.New(rand.NewPCG(46, 4))
	for _, text := range streamSamples {
		want, _ := r.Redact(text)
		for trial := range 100 {
			pieces := split(rng, text, trial)
			st := r.Stream()
			var got strings.Builder
			for _, p := range pieces {
				out := st.Write(p)
				if !utf8.ValidString(out) {
					t.Fatalf("piece %q of %q is not valid UTF-8 (a rune was cut)", out, pieces)
				}
				for _, secret := range []string{"ada@", "example", "4111", "0958", "123-4567", "3704", "sk-proj", "TCK-"} {
					if strings.Contains(out, secret) && !strings.Contains(want, secret) {
						t.Fatalf("piece %q of %q carries %q", out, pieces, secret)
					}
				}
				got.WriteString(out)
			}
			got.WriteString(st.Flush())
			if got.String() != want {
				t.Fatalf("split %q:\n got %q\nwant %q", pieces, got.String(), want)
			}
		}
	}
}

// split cuts text at random byte offsets (runes too: a full-width @ arrives in two
// pieces), one piece per byte on some trials.
func split(rng *rand.Rand, text string, trial int) []string {
	if trial == 0 {
		return strings.SplitAfter(text, "")
	}
	var out []string
	for len(text) > 0 {
		n := 1 + rng.IntN(min(len(text), 12))
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// A stream holds back only what may still become a match: ordinary prose goes out a
// word behind; a run of text that could be a match is held whole until it cannot; a
// hostile run longer than any match is let go in bounded pieces rather than held for
// ever; Flush returns the rest.
func TestStreamHoldsBackOnlyWhatMayStillMatch(t *testing.T) {
	r := mustNew(t, Config{})
	st := r.Stream()
	for _, step := range []struct{ in, out string }{
		{"Hello there, my friend", "Hello there, my "}, // the last word may be an address
		{", call 4111 1111", "friend, call"},           // digits may be a card
		{" 1111 1111", ""},                             // and may go on
		{". done", " [card]. "},                        // a word that cannot be one
		{" mail ada\uff20exam", "done mail "},          // an address in the making
		{"ple.org\n", "[email]\n"},                     // a line break ends it
	} {
		if out := st.Write(step.in); out != step.out {
			t.Fatalf("Write(%q) = %q, want %q", step.in, out, step.out)
		}
	}
	if out := st.Flush(); out != "" || st.Counts()["card"] != 1 || st.Counts()["email"] != 1 {
		t.Fatalf("flush: %q, counts %v", out, st.Counts())
	}
	huge := r.Stream()
	var sent strings.Builder
	for range 400 {
		sent.WriteString(huge.Write(strings.Repeat("a", 10)))
		if held := len(huge.pending); held > 2*StreamWindow+10 {
			t.Fatalf("a run of letters: %d bytes held back, more than %d", held, 2*StreamWindow+10)
		}
	}
	sent.WriteString(huge.Flush())
	if sent.String() != strings.Repeat("a", 4000) {
		t.Fatalf("the run of letters came out as %d bytes", sent.Len())
	}
}

// The store stage redacts JSON held in strings as JSON: a tool call's arguments in a
// message and in an assistant_message event, written with escapes the model chose
// (\uff20 for a full-width @, \u00a0 for no-break spaces), are matched decoded, and stay
// valid JSON.
func TestEntryRedactsEscapedToolArguments(t *testing.T) {
	r := mustNew(t, Config{})
	args := `{"text":"ana\uff20example.org, card 4111\u00a01111\u00a01111\u00a01111"}`
	msg := loop.Message{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: "c1", Name: "remember", Arguments: args}}}
	got := r.Entry(loop.Entry{Kind: loop.EntryMessage, Message: &msg})
	if a := got.Message.ToolCalls[0].Arguments; a != `{"text":"[email], card [card]"}` {
		t.Fatalf("message arguments: %s", a)
	}
	if msg.ToolCalls[0].Arguments != args {
		t.Fatal("the run's own message was changed")
	}
	ev := r.Entry(loop.Entry{Kind: loop.EntryEvent, Event: &loop.Event{Type: loop.EventAssistantMessage,
		Data: &loop.AssistantMessageData{Message: msg}}})
	b, _ := json.Marshal(ev.Event.Data)
	if strings.Contains(string(b), "example") || strings.Contains(string(b), "4111") {
		t.Fatalf("event: %s", b)
	}
}

// BenchmarkStream streams a 10 KB answer (prose with addresses and cards) in deltas of
// four bytes, as a model does: the cost per answer of redacting it before the wire.
func BenchmarkStream(b *testing.B) {
	r, _ := New(Config{})
	answer := strings.Repeat("The customer ada@example.com paid with 4111 1111 1111 1111 on Tuesday; nothing else to report. ", 100)
	b.SetBytes(int64(len(answer)))
	for b.Loop() {
		st := r.Stream()
		for i := 0; i < len(answer); i += 4 {
			st.Write(answer[i:min(i+4, len(answer))])
		}
		st.Flush()
	}
}
