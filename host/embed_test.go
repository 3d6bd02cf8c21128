package host

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/providers"
)

// embeddingsOn is [memory] with the scripted adapter's embeddings (a token per word).
const embeddingsOn = "[memory]\nenabled = true\nembeddings = { provider = \"scripted\" }\n"

func runAs(t *testing.T, h *Host, user, prompt string) loop.RunResult {
	t.Helper()
	res, _ := h.Agent.RunWith(context.Background(), loop.RunInput{User: user, Messages: []loop.Message{loop.UserMessage(prompt)}}, nil)
	return res
}

// The embeddings a run needs (recall's query before each model call, the remember tool's
// memory) are charged to the run's one ledger: its usage is its model calls plus a token
// per embedded word, and nothing of it is counted as spent outside a run. A memory added
// outside a run (the CLI, the HTTP API) is counted there instead.
func TestEmbeddingsAreChargedToTheRun(t *testing.T) {
	h := openHost(t, `{"turns": [
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "r1", "name": "remember", "arguments": "{\"text\": \"Ana's favourite tea is genmaicha\"}"}]},
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "text": "Noted."}]}`, embeddingsOn, Options{})
	res := runAs(t, h, "ana", "remember my tea")
	if res.Status != loop.StatusCompleted || res.Final.Text() != "Noted." {
		t.Fatalf("%s/%s %v", res.Status, res.Reason, res.Err)
	}
	// Two calls of 11; recall embeds "remember my tea" (3 words) before each; remember
	// embeds "Ana's favourite tea is genmaicha" (ana, s, favourite, tea, is, genmaicha).
	if want := 2*11 + 3 + 6 + 3; res.Usage.TotalTokens != want || res.Usage.PromptTokens != want-2 {
		t.Fatalf("the run's usage %+v, want %d tokens", res.Usage, want)
	}
	if got := h.EmbeddingSpend(); got != (loop.Usage{}) {
		t.Fatalf("a run's embeddings counted outside it: %+v", got)
	}
	ms, _ := h.Memory()
	e, _ := memory.New("ana", "", memory.KindFact, "Ana cycles to work", time.Now())
	if err := ms.AddMemory(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if got := h.EmbeddingSpend(); got.TotalTokens != 4 || got.PromptTokens != 4 {
		t.Fatalf("spend outside a run %+v, want 4 tokens", got)
	}
	list, err := ms.ListMemory(context.Background(), memory.Filter{User: "ana"})
	if err != nil || len(list) != 2 || list[0].VectorModel != "scripted/" || list[1].VectorModel != "scripted/" {
		t.Fatalf("memories %+v %v", list, err)
	}
}

// An embedding provider of its own is priced at its own [providers.NAME] pricing, not at
// the agent's: the run's cost is its model calls at the agent's prices plus its
// embedded tokens at the embedder's.
func TestEmbeddingsArePricedAtTheirProvidersPrices(t *testing.T) {
	h := openHostWith(t, "[agent.pricing]\nprompt_per_mtok = 100.0\ncompletion_per_mtok = 100.0", `{"turns": [
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "r1", "name": "remember", "arguments": "{\"text\": \"Ana's favourite tea is genmaicha\"}"}]},
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "text": "Noted."}]}`,
		fmt.Sprintf("[providers.embedder]\ncommand = %q\noptions = { script = \"script.json\" }\npricing = { prompt_per_mtok = 1000.0 }\n", scriptedBin)+
			"[memory]\nenabled = true\nembeddings = { provider = \"embedder\", model = \"small\" }\n", Options{})
	res := runAs(t, h, "ana", "remember my tea")
	if res.Status != loop.StatusCompleted {
		t.Fatalf("%s/%s %v", res.Status, res.Reason, res.Err)
	}
	if want := 22*100.0/1e6 + 12*1000.0/1e6; math.Abs(res.Usage.CostUSD-want) > 1e-12 {
		t.Fatalf("cost %v, want %v", res.Usage.CostUSD, want)
	}
	ms, _ := h.Memory()
	if list, _ := ms.ListMemory(context.Background(), memory.Filter{User: "ana"}); len(list) != 1 || list[0].VectorModel != "embedder/small" {
		t.Fatalf("memories %+v", list)
	}
}

// A run whose budget the recall embedding spends stops budget_exceeded before its model
// call: the embedding was admitted (it fitted), charged, and then the model call no longer
// fits. The same run without embeddings makes its call.
func TestAnEmbeddingCanExhaustTheRunsBudget(t *testing.T) {
	prompt := strings.TrimSpace(strings.Repeat("tea ", 100)) // 100 words; the call is estimated at 4+3 + 4+99 tokens
	fixture := `{"turns": [{"text": "made the call"}]}`
	without := openHostWith(t, "max_tokens = 150", fixture, "[memory]\nenabled = true\n", Options{})
	if res := runAs(t, without, "ana", prompt); res.Status != loop.StatusCompleted || res.Final.Text() != "made the call" {
		t.Fatalf("without embeddings: %s/%s %v", res.Status, res.Reason, res.Err)
	}
	with := openHostWith(t, "max_tokens = 150", fixture, embeddingsOn, Options{})
	res := runAs(t, with, "ana", prompt)
	if res.Status != loop.StatusIncomplete || res.Reason != loop.ReasonBudgetExceeded || res.Usage.TotalTokens != 100 {
		t.Fatalf("with embeddings: %s/%s, %d tokens (want budget_exceeded after the 100 of the recall's embedding)", res.Status, res.Reason, res.Usage.TotalTokens)
	}
	// A remember the budget cannot pay for is refused, not stored.
	small := openHostWith(t, "max_tokens = 30", `{"turns": [
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "r1", "name": "remember", "arguments": "{\"text\": \"`+prompt+`\"}"}]},
	  {"text": "summary"}]}`, embeddingsOn, Options{})
	res, evs := runWith(t, small, "ana", "hi")
	var refused bool
	for _, e := range evs {
		if d, ok := e.Data.(*loop.ToolResultData); ok && d.IsError && strings.Contains(d.Content, "embedding refused") && strings.Contains(d.Content, "budget") {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("remember over the budget was not refused; result %s/%s", res.Status, res.Reason)
	}
	ms, _ := small.Memory()
	if list, _ := ms.ListMemory(context.Background(), memory.Filter{User: "ana"}); len(list) != 0 {
		t.Fatalf("a memory the budget could not embed was stored: %+v", list)
	}
}

func runWith(t *testing.T, h *Host, user, prompt string) (loop.RunResult, []loop.Event) {
	t.Helper()
	var evs []loop.Event
	res, _ := h.Agent.RunWith(context.Background(), loop.RunInput{User: user, Messages: []loop.Message{loop.UserMessage(prompt)}},
		func(e loop.Event) { evs = append(evs, e) })
	return res, evs
}

// A backfill embeds the memories stored before embeddings were on (and those another
// model embedded), in batches, reporting each; run again it has nothing to do. Only the
// named user's are embedded with --user.
func TestReindexBackfillsInBatchesAndOnce(t *testing.T) {
	ctx := context.Background()
	plain := openHost(t, `{"turns": []}`, "[memory]\nenabled = true\n", Options{})
	ms, _ := plain.Memory()
	for i, u := range []string{"ana", "ana", "ana", "ana", "ana", "bo"} {
		e, _ := memory.New(u, "", memory.KindFact, fmt.Sprintf("memory %d of %s", i, u), time.Now())
		if err := ms.AddMemory(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plain.ReindexMemory(ctx, "", 0, nil); !errors.Is(err, ErrNoEmbeddings) {
		t.Fatalf("reindex without embeddings: %v", err)
	}
	// The same store, now with embeddings (the in-process store outlives neither host,
	// so the second host is handed the first one's).
	h := openHost(t, `{"turns": []}`, embeddingsOn, Options{})
	h.memory.(*embeddedMemory).Store = plain.memory // the store below the memory service
	var seen []Reindexed
	st, err := h.ReindexMemory(ctx, "ana", 2, func(r Reindexed) { seen = append(seen, r) })
	if err != nil || st.Done != 5 || st.Total != 5 || st.Usage.TotalTokens != 5*4 {
		t.Fatalf("reindex ana: %+v %v", st, err)
	}
	var steps []string
	for _, r := range seen {
		steps = append(steps, fmt.Sprintf("%d/%d:%d", r.Done, r.Total, r.Usage.TotalTokens))
	}
	if got := strings.Join(steps, " "); got != "2/5:8 4/5:16 5/5:20" {
		t.Fatalf("progress %s", got)
	}
	if h.EmbeddingSpend().TotalTokens != 20 {
		t.Fatalf("spend outside a run %+v", h.EmbeddingSpend())
	}
	if st, err := h.ReindexMemory(ctx, "ana", 2, nil); err != nil || st.Done != 0 || st.Total != 0 {
		t.Fatalf("second reindex of ana: %+v %v", st, err)
	}
	if st, err := h.ReindexMemory(ctx, "", 0, nil); err != nil || st.Done != 1 || st.Total != 1 {
		t.Fatalf("reindex of everyone after ana's: %+v %v", st, err)
	}
	list, _ := ms.ListMemory(ctx, memory.Filter{User: "ana"})
	for _, e := range list {
		if e.VectorModel != "scripted/" || len(e.Vector) != 64 {
			t.Fatalf("after reindex: %+v", e)
		}
	}
}

// A backfill the provider fails in the middle of keeps the batches it stored, and the
// next one embeds only the rest.
func TestReindexResumesAfterAFailure(t *testing.T) {
	ctx := context.Background()
	h := openHost(t, `{"turns": []}`, "[memory]\nenabled = true\n", Options{})
	ms, _ := h.Memory()
	inner := h.memory // the store below the memory service
	for i := range 5 {
		e, _ := memory.New("ana", "", memory.KindFact, fmt.Sprintf("memory %d", i), time.Now())
		if err := ms.AddMemory(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	h = openHost(t, `{"turns": []}`, embeddingsOn, Options{})
	em := h.memory.(*embeddedMemory)
	em.Store = inner
	orig, calls := em.embed, 0
	var embedded []string
	em.embed = func(ctx context.Context, texts []string) ([][]float32, *providers.Usage, error) {
		if calls++; calls == 2 {
			return nil, nil, errors.New("provider down")
		}
		embedded = append(embedded, texts...)
		return orig(ctx, texts)
	}
	st, err := h.ReindexMemory(ctx, "", 2, nil)
	if err == nil || !strings.Contains(err.Error(), "provider down") || st.Done != 2 || st.Total != 5 {
		t.Fatalf("interrupted: %+v %v", st, err)
	}
	st, err = h.ReindexMemory(ctx, "", 2, nil)
	if err != nil || st.Done != 3 || st.Total != 3 || len(embedded) != 5 {
		t.Fatalf("resumed: %+v %v, %d texts embedded in all", st, err, len(embedded))
	}
	slices.Sort(embedded)
	if strings.Join(embedded, ",") != "memory 0,memory 1,memory 2,memory 3,memory 4" {
		t.Fatalf("embedded %q: each memory once", embedded)
	}
}
