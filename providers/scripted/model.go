package scripted

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/providers"
)

// Model replays a Fixture. It is safe for concurrent use; concurrent calls
// take turns in the order they arrive.
type Model struct {
	mu      sync.Mutex
	fixture *Fixture
	source  string // file name for messages; "" for in-memory fixtures
	next    int    // index of the next turn
	// perSession holds the next turn index by session when the fixture is PerSession.
	perSession map[string]int
	// story holds the story index by session, for a fixture with Stories.
	story map[string]int
	// noEmbed is the embeddings = "off" option: Embed then fails as on an adapter
	// without embeddings (embed.go).
	noEmbed bool
}

// New returns a model replaying f. f may be nil when the fixture will come
// from Configure (the `script` option), as in the adapter binary.
func New(f *Fixture) *Model {
	return &Model{fixture: f}
}

// Configure loads the fixture named by the `script` option, or given inline as JSON
// by `script_json` (a manifest that carries its own fixture, as `agenthost init`
// writes), and starts from its first turn. Unknown options are errors.
func (m *Model) Configure(_ context.Context, options map[string]string) error {
	for k := range options {
		if k != "script" && k != "script_json" && k != "embeddings" {
			return fmt.Errorf("scripted: unknown option %q (known: script, script_json, embeddings)", k)
		}
	}
	switch options["embeddings"] {
	case "", "on":
		m.setNoEmbed(false)
	case "off":
		m.setNoEmbed(true)
	default:
		return fmt.Errorf("scripted: embeddings %q: want on or off", options["embeddings"])
	}
	path, ok := options["script"]
	inline, hasInline := options["script_json"]
	var (
		f   *Fixture
		err error
	)
	switch {
	case ok && hasInline:
		return fmt.Errorf("scripted: set script or script_json, not both")
	case ok:
		f, err = Load(path)
	case hasInline:
		path = "(script_json)"
		if f, err = Parse([]byte(inline)); err != nil {
			err = fmt.Errorf("scripted: script_json: %w", err)
		}
	default:
		return nil
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fixture, m.source, m.next, m.perSession, m.story = f, path, 0, nil, nil
	return nil
}

// Info describes the scripted model.
func (m *Model) Info(context.Context) (*providers.Info, error) {
	caps := []string{"tools", "reasoning", "streaming", providers.CapEmbeddings}
	if m.embedOff() {
		caps = caps[:3]
	}
	return &providers.Info{
		Name:         "scripted",
		Models:       []string{"scripted"},
		Capabilities: caps,
	}, nil
}

// Stream plays the next turn.
func (m *Model) Stream(ctx context.Context, req *providers.ChatRequest, send func(*providers.ChatEvent) error) error {
	turn, n, err := m.take(req.GetMetadata().GetSession(), firstUserText(req))
	if err != nil {
		return err
	}
	if err := check(turn.Expect, req); err != nil {
		return &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("scripted: turn %d: %v", n, err)}
	}
	if err := sleep(ctx, turn.DelayMs); err != nil {
		return err
	}
	if e := turn.Error; e != nil {
		return scriptedError(e, n)
	}
	reasoning, err := expand(ctx, turn.Reasoning, req)
	if err != nil {
		return &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("scripted: turn %d: reasoning: %v", n, err)}
	}
	text, err := expand(ctx, turn.Text, req)
	if err != nil {
		return &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("scripted: turn %d: text: %v", n, err)}
	}
	for i, ev := range turnEvents(turn, reasoning, text) {
		if i > 0 {
			if err := sleep(ctx, turn.ChunkDelayMs); err != nil {
				return err
			}
		}
		if err := send(ev); err != nil {
			return err
		}
	}
	return nil
}

// scriptedError is the typed error a turn's `error` plays (turn n).
func scriptedError(e *TurnError, n int) error {
	retryable := providers.DefaultRetryable(e.Kind)
	if e.Retryable != nil {
		retryable = *e.Retryable
	}
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("scripted: turn %d: scripted %s error", n, e.Kind)
	}
	return &providers.Error{Kind: e.Kind, Message: msg, RetryAfter: time.Duration(e.RetryAfterMs) * time.Millisecond, Retryable: retryable,
		Status: e.Status}
}

// turnEvents is what a turn streams, in order: reasoning and text (cut into chunks),
// each tool call's argument fragments, usage, and the finish event.
func turnEvents(turn *Turn, reasoning, text string) []*providers.ChatEvent {
	var events []*providers.ChatEvent
	for _, s := range split(reasoning, turn.Chunk) {
		events = append(events, providers.ReasoningEvent(s))
	}
	for _, s := range split(text, turn.Chunk) {
		events = append(events, providers.TextEvent(s))
	}
	for i, c := range turn.ToolCalls {
		frags := split(c.Arguments, turn.ArgsChunk)
		if len(frags) == 0 {
			frags = []string{""}
		}
		for k, f := range frags {
			d := &providers.ToolCallDelta{Index: int32(i), Arguments: f}
			if k == 0 {
				d.Id, d.Name = c.ID, c.Name
			}
			events = append(events, providers.ToolCallEvent(d))
		}
	}
	if u := turn.Usage; u != nil {
		total := u.TotalTokens
		if total == 0 {
			total = u.PromptTokens + u.CompletionTokens
		}
		events = append(events, providers.UsageEvent(&providers.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total, CostUsd: u.CostUSD}))
	}
	stop := turn.StopReason
	if stop == "" {
		stop = providers.StopEndTurn
		if len(turn.ToolCalls) > 0 {
			stop = providers.StopToolUse
		}
	}
	return append(events, providers.FinishEvent(stop))
}

// take consumes the next turn (of the session, for a PerSession fixture); n is its
// 1-based number for messages. firstUser picks a session's story.
func (m *Model) take(session, firstUser string) (*Turn, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fixture == nil {
		return nil, 0, &providers.Error{Kind: providers.KindProvider, Message: "scripted: no fixture loaded (set the script option)"}
	}
	if m.fixture.perSession() {
		if m.perSession == nil {
			m.perSession = map[string]int{}
		}
		saved := m.next
		m.next = m.perSession[session]
		defer func() { m.perSession[session], m.next = m.next, saved }()
	}
	turns, err := m.turnsOf(session, firstUser)
	if err != nil {
		return nil, 0, err
	}
	if m.next >= len(turns) && m.fixture.Repeat && len(turns) > 0 {
		m.next = 0
	}
	if m.next >= len(turns) {
		where := "the fixture"
		if m.source != "" {
			where = m.source
		}
		return nil, 0, &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("scripted: out of turns: call %d, but %s has %d turns", m.next+1, where, len(turns))}
	}
	m.next++
	return &turns[m.next-1], m.next, nil
}

// turnsOf is the turns a session plays: the fixture's, or its story's (chosen on the
// session's first call by its first user message).
func (m *Model) turnsOf(session, firstUser string) ([]Turn, error) {
	if len(m.fixture.Stories) == 0 {
		return m.fixture.Turns, nil
	}
	if m.story == nil {
		m.story = map[string]int{}
	}
	i, ok := m.story[session]
	if !ok {
		i = -1
		for k, st := range m.fixture.Stories {
			if strings.Contains(firstUser, st.When) {
				i = k
				break
			}
		}
		if i < 0 {
			return nil, &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("scripted: no story's when is part of the first user message %q", firstUser)}
		}
		m.story[session] = i
	}
	return m.fixture.Stories[i].Turns, nil
}

// firstUserText is the text of the request's first user message.
func firstUserText(req *providers.ChatRequest) string {
	for _, msg := range req.GetMessages() {
		if msg.GetRole() == providers.RoleUser {
			return providers.TextOf(msg)
		}
	}
	return ""
}

func check(e *Expect, req *providers.ChatRequest) error {
	if e == nil {
		return nil
	}
	msgs := req.GetMessages()
	if e.LastRole != "" {
		last := "(none)"
		if len(msgs) > 0 {
			last = msgs[len(msgs)-1].GetRole()
		}
		if last != e.LastRole {
			return fmt.Errorf("expect.last_role %q, but the last message is %q", e.LastRole, last)
		}
	}
	if e.ToolsOffered != nil && *e.ToolsOffered != (len(req.GetTools()) > 0) {
		if *e.ToolsOffered {
			return fmt.Errorf("expect.tools_offered true, but the request offers no tools")
		}
		return fmt.Errorf("expect.tools_offered false, but the request offers %d tools", len(req.GetTools()))
	}
	if e.Messages != nil && *e.Messages != len(msgs) {
		return fmt.Errorf("expect.messages %d, but the request carries %d", *e.Messages, len(msgs))
	}
	if err := e.checkSystem(msgs); err != nil {
		return err
	}
	if e.Tools != nil {
		var got []string
		for _, t := range req.GetTools() {
			got = append(got, t.GetName())
		}
		if strings.Join(got, ",") != strings.Join(e.Tools, ",") {
			return fmt.Errorf("expect.tools %v, but the request offers %v", e.Tools, got)
		}
	}
	if e.Contains != "" {
		var lastUser *providers.Message
		for _, m := range msgs {
			if m.GetRole() == providers.RoleUser {
				lastUser = m
			}
		}
		if lastUser == nil || !strings.Contains(providers.TextOf(lastUser), e.Contains) {
			return fmt.Errorf("expect.contains %q not found in the last user message", e.Contains)
		}
	}
	return nil
}

var (
	resultRef = regexp.MustCompile(`\{\{\s*result\s+([^}\s]+)\s*\}\}`)
	readRef   = regexp.MustCompile(`\{\{\s*read\s+([^}\s]+)\s*\}\}`)
)

// expand replaces {{result ID}} with the text of the tool message answering ID,
// {{traceparent}} with the W3C traceparent the host sent with the call (empty when it
// traces nothing), so tests can see the trace cross the process boundary, and {{read
// PATH}} with the file's content as this process reads it, or "error: " and why it
// cannot, so tests can see what a confined adapter may read (the fixture is the
// manifest author's, never the model's).
func expand(ctx context.Context, s string, req *providers.ChatRequest) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil // nothing to expand: no regexp pass on every call
	}
	s = strings.ReplaceAll(s, "{{traceparent}}", providers.TraceParent(ctx))
	if strings.Contains(s, "{{media}}") {
		s = strings.ReplaceAll(s, "{{media}}", mediaOf(req))
	}
	s = readRef.ReplaceAllStringFunc(s, func(ref string) string {
		b, err := os.ReadFile(readRef.FindStringSubmatch(ref)[1])
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	})
	var missing string
	out := resultRef.ReplaceAllStringFunc(s, func(ref string) string {
		id := resultRef.FindStringSubmatch(ref)[1]
		for _, m := range req.GetMessages() {
			if m.GetRole() == providers.RoleTool && m.GetToolCallId() == id {
				return providers.TextOf(m)
			}
		}
		if missing == "" {
			missing = id
		}
		return ref
	})
	if missing != "" {
		return "", fmt.Errorf("{{result %s}}: the request has no tool message with tool_call_id %q", missing, missing)
	}
	return out, nil
}

// split cuts s into pieces of n runes; n <= 0 keeps it whole.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	r := []rune(s)
	if n <= 0 || n >= len(r) {
		return []string{s}
	}
	var out []string
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func sleep(ctx context.Context, ms int) error {
	if ms <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkSystem checks the system, system_contains and system_lacks expectations.
func (e *Expect) checkSystem(msgs []*providers.Message) error {
	got, has := "(none)", len(msgs) > 0 && msgs[0].GetRole() == providers.RoleSystem
	if has {
		got = providers.TextOf(msgs[0])
	}
	switch {
	case e.System != "" && got != e.System:
		return fmt.Errorf("expect.system %q, but the system message is %q", e.System, got)
	case e.SystemContains != "" && (!has || !strings.Contains(got, e.SystemContains)):
		return fmt.Errorf("expect.system_contains %q, but the system message is %q", e.SystemContains, got)
	case e.SystemLacks != "" && has && strings.Contains(got, e.SystemLacks):
		return fmt.Errorf("expect.system_lacks %q, but the system message is %q", e.SystemLacks, got)
	}
	return nil
}

// mediaOf is {{media}}: each media part of the request, in order, as "TYPE MIME N B
// sha256:HEX" (the sha256 of the bytes the adapter got), joined by "; "; "no media" when
// there is none. How a test sees that the model got exactly the bytes it was meant to.
func mediaOf(req *providers.ChatRequest) string {
	var out []string
	for _, m := range req.GetMessages() {
		for _, p := range m.GetContent() {
			if p.GetType() == providers.PartText || p.GetType() == "" {
				continue
			}
			data := p.GetData()
			if len(data) == 0 {
				data = p.GetImageData()
			}
			sum := sha256.Sum256(data)
			out = append(out, fmt.Sprintf("%s %s %d B sha256:%x", p.GetType(), p.GetMediaType(), len(data), sum))
		}
	}
	if len(out) == 0 {
		return "no media"
	}
	return strings.Join(out, "; ")
}
