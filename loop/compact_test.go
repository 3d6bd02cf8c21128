package loop

import (
	"context"
	"strings"
	"testing"
)

// L11, summarising compaction: once the model input passes CompactAt, the older half of
// the history is summarised by the model (quietly, charged to the run), stored as a
// compaction, and the call is made from the summary; the next run starts from it too.
func TestL11_ALongConversationIsSummarisedAndStored(t *testing.T) {
	long := strings.Repeat("word ", 20) // 100 bytes, ~25 tokens
	m := script(turn{text: "a1"}, turn{text: "a2"}, turn{text: "the user asked twice about words"}, turn{text: "a3"}, turn{text: "a4"})
	a := newAgent(t, Config{Model: m, CompactAt: 60})
	var evs []Event
	var res RunResult
	for _, u := range []string{"u1 " + long, "u2 " + long, "u3 " + long} {
		res, evs = runCollect(t, a, userIn("s", u))
		if res.Status != StatusCompleted {
			t.Fatalf("run: %+v", res)
		}
	}
	reqs := m.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4 (two runs, then a summary and the third run's call)", len(reqs))
	}
	sum := reqs[2].Messages
	if len(sum) != 2 || sum[0].Text() != summarisePrompt || !strings.HasPrefix(sum[1].Text(), "user: u1 word") || !strings.Contains(sum[1].Text(), "\nassistant: a1\n") ||
		strings.Contains(sum[1].Text(), "u2") || len(reqs[2].Tools) != 0 {
		t.Fatalf("summary request = %+v", sum)
	}
	third := reqs[3].Messages
	if len(third) != 4 || third[0].Text() != SummaryHeader+"\nthe user asked twice about words" || !strings.HasPrefix(third[1].Text(), "u2 ") {
		t.Fatalf("third run's input = %v", texts(third))
	}
	if res.Usage.TotalTokens != 30 { // its own call and the summary's, 15 each
		t.Fatalf("third run's usage = %+v, want the summary charged too", res.Usage)
	}
	var update *ContextUpdateData
	for _, e := range evs {
		if e.Type == EventContextUpdate {
			update = e.Data.(*ContextUpdateData)
		}
		if e.Type == EventModelDelta && e.Data.(*ModelDeltaData).Text == "the user asked twice about words" {
			t.Fatal("the summary was streamed to clients as if it were the answer")
		}
	}
	if update == nil || !update.Summarised || update.Compacted != 2 {
		t.Fatalf("context_update = %+v", update)
	}
	entries, _ := a.Store().Load(context.Background(), "s")
	stored := 0
	for _, e := range entries {
		if e.Kind == EntryCompaction && e.Compaction.Replace == 2 && e.Compaction.Summary[0].Text() == SummaryHeader+"\nthe user asked twice about words" {
			stored++
		}
	}
	if stored != 1 {
		t.Fatalf("stored summarised compactions = %d, want 1", stored)
	}
	// The next run starts from the summary: its input begins with it (and, being large
	// again, is summarised again first).
	runCollect(t, a, userIn("s", "u4"))
	if got := m.requests()[4].Messages[1].Text(); !strings.HasPrefix(got, "user: "+SummaryHeader) {
		t.Fatalf("the fourth run's summary request starts %q", got)
	}
}

// A context overflow takes the summarising path first; when the summary fails, the
// strategies' compaction is the fallback and the run still answers.
func TestL11_OverflowIsSummarisedFirstAndFallsBack(t *testing.T) {
	overflow := &ModelError{Kind: KindContextOverflow, Message: "too long"}
	m := script(turn{text: "a1"}, turn{text: "a2"},
		turn{err: overflow}, turn{text: "S"}, turn{text: "a3"}, // summarised
		turn{err: overflow}, turn{err: &ModelError{Kind: KindInvalidRequest, Message: "no"}}, turn{text: "a4"}) // fallback
	a := newAgent(t, Config{Model: m, CompactAt: 1_000_000})
	for i, u := range []string{"u1", "u2", "u3", "u4"} {
		if res, _ := runCollect(t, a, userIn("s", u)); res.Status != StatusCompleted {
			t.Fatalf("run %d: %+v", i, res)
		}
	}
	reqs := m.requests()
	if got := reqs[4].Messages[0].Text(); got != SummaryHeader+"\nS" {
		t.Fatalf("after overflow the input starts %q, want the summary", got)
	}
	if got := reqs[7].Messages[1].Text(); !strings.Contains(got, "[context compacted:") {
		t.Fatalf("after a failed summary the input = %v, want DefaultContext's compaction", texts(reqs[7].Messages))
	}
}

func texts(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role)+":"+m.Text())
	}
	return out
}
