package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Team is a set of agents that hand a run to each other (transfer_to_NAME) and call each
// other as tools (ask_NAME). Build it once, before any of its agents runs.
//
// A hand-off continues the same run and session under the target: its system prompt, its
// model, its tools and policy, its hooks; the events from then on carry its name. A run
// may hand off Config.MaxHandoffs times (the starting agent's); one more ends it
// incomplete/max_handoffs with a summary. A transfer back to an agent already on the
// run's chain is refused (an error result the model sees) unless AllowCycles.
//
// An ask_NAME call runs NAME on a session of its own, PARENT:ask:CALLID, with the
// question as its prompt, and returns its final answer: the sub-run's history is kept
// and can be read like any session's. Asks nest at most MaxHandoffs deep.
type Team struct {
	agents map[string]*Agent
	order  []string
}

// NewTeam joins agents into a team. Names must be unique and non-empty, hand-off
// targets must be members, and all must share one store (a hand-off continues the
// session).
func NewTeam(agents ...*Agent) (*Team, error) {
	t := &Team{agents: map[string]*Agent{}}
	for _, a := range agents {
		name := a.cfg.Name
		if name == "" {
			return nil, errors.New("loop: a team agent needs a name")
		}
		if _, dup := t.agents[name]; dup {
			return nil, fmt.Errorf("loop: two team agents are named %q", name)
		}
		if a.team != nil {
			return nil, fmt.Errorf("loop: agent %q is already in a team", name)
		}
		if len(agents) > 0 && a.cfg.Store != agents[0].cfg.Store {
			return nil, fmt.Errorf("loop: agent %q has another store than %q: a team shares one", name, agents[0].cfg.Name)
		}
		t.agents[name] = a
		t.order = append(t.order, name)
	}
	for _, a := range agents {
		for _, h := range a.cfg.Handoffs {
			if _, ok := t.agents[h]; !ok {
				return nil, fmt.Errorf("loop: agent %q hands off to %q, which is not in the team", a.cfg.Name, h)
			}
			if h == a.cfg.Name {
				return nil, fmt.Errorf("loop: agent %q hands off to itself", h)
			}
		}
	}
	for _, a := range agents {
		a.team = t
	}
	return t, nil
}

// Agent returns the member named name.
func (t *Team) Agent(name string) (*Agent, bool) {
	a, ok := t.agents[name]
	return a, ok
}

// Names lists the members in the order NewTeam got them.
func (t *Team) Names() []string { return slices.Clone(t.order) }

// Team is the team a is a member of, or nil.
func (a *Agent) Team() *Team { return a.team }

func (a *Agent) teamAgent(name string) (*Agent, error) {
	if a.team != nil {
		if b, ok := a.team.agents[name]; ok {
			return b, nil
		}
	}
	return nil, &startError{fmt.Errorf("loop: no agent %q", name)}
}

const (
	transferPrefix = "transfer_to_"
	askPrefix      = "ask_"
)

var (
	transferSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"why the other agent should take over"}}}`)
	askSchema      = json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"what to ask, with everything the agent needs to know"}},"required":["question"]}`)
)

// teamState is a run's hand-off bookkeeping.
type teamState struct {
	mu      sync.Mutex
	first   string   // the agent that started the run
	chain   []string // the agents it handed off to, in order (allocated on the first)
	to      string   // a transfer accepted in the current step
	reason  string
	overMax bool // a transfer was refused for max_handoffs
}

// handoffs is how many times the run was handed off.
func (ts *teamState) handoffs() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.chain)
}

// teamSpecs are the team tools of the acting agent.
func (r *run) teamSpecs() []ToolSpec { return r.a.team.specsFor(r.cfg) }

// TeamTools are the hand-off (transfer_to_NAME) and ask_NAME tools a's model is offered
// beside its own tools when a acts in a run: what a run offers, from the same place (a
// listing such as `plugins list` shows them from here). Nil outside a team.
func (a *Agent) TeamTools() []ToolSpec { return a.team.specsFor(&a.cfg) }

// specsFor are the team tools of the agent whose configuration is cfg; nil without a team.
func (t *Team) specsFor(cfg *Config) []ToolSpec {
	if t == nil {
		return nil
	}
	var out []ToolSpec
	for _, h := range cfg.Handoffs {
		out = append(out, ToolSpec{Name: transferPrefix + h, InputSchema: transferSchema,
			Description: strings.TrimSpace("Hand the conversation over to the agent " + h + ". " + t.agents[h].cfg.Description)})
	}
	for _, name := range t.order {
		b := t.agents[name]
		if b.cfg.AsTool && name != cfg.Name {
			out = append(out, ToolSpec{Name: askPrefix + name, InputSchema: askSchema,
				Description: strings.TrimSpace("Ask the agent " + name + " and get its answer. " + b.cfg.Description)})
		}
	}
	return out
}

// teamTool is the tool behind a team tool's name, or nil.
func (r *run) teamTool(name string) Tool {
	t := r.a.team
	if t == nil {
		return nil
	}
	if target, ok := strings.CutPrefix(name, transferPrefix); ok && slices.Contains(r.cfg.Handoffs, target) {
		return FuncTool{ToolSpec: ToolSpec{Name: name, InputSchema: transferSchema}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
			return r.transfer(target, c), nil
		}}
	}
	if target, ok := strings.CutPrefix(name, askPrefix); ok {
		if b, ok := t.agents[target]; ok && b.cfg.AsTool && target != r.cfg.Name {
			return FuncTool{ToolSpec: ToolSpec{Name: name, InputSchema: askSchema}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
				return r.ask(ctx, b, c)
			}}
		}
	}
	return nil
}

// transfer accepts or refuses a hand-off; an accepted one happens after the step.
func (r *run) transfer(target string, c ToolCall) ToolResult {
	var args struct{ Reason string }
	_ = json.Unmarshal([]byte(c.Arguments), &args)
	ts := &r.team
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch {
	case ts.to != "":
		return ErrorResult(fmt.Sprintf("Error: transfer to %s refused: this step already transfers to %s", target, ts.to))
	case len(ts.chain) >= r.maxHandoffs:
		ts.overMax = true
		return ErrorResult(fmt.Sprintf("Error: transfer to %s refused: the run reached max_handoffs (%d)", target, r.maxHandoffs))
	case (target == ts.first || slices.Contains(ts.chain, target)) && !r.allowCycles:
		return ErrorResult(fmt.Sprintf("Error: transfer to %s refused: %s already acted in this run (%s), and cycles are not allowed",
			target, target, strings.Join(append([]string{ts.first}, ts.chain...), " → ")))
	}
	ts.to, ts.reason = target, args.Reason
	return TextResult("Transferred to " + target + ".")
}

// transferState reports what a step's transfers decided: one was accepted (iterate
// applies it, handOff), and one was refused for max_handoffs.
func (r *run) transferState() (accepted, refused bool) {
	ts := &r.team
	ts.mu.Lock()
	defer ts.mu.Unlock()
	refused, ts.overMax = ts.overMax, false
	return ts.to != "", refused
}

// handOff applies the transfer the step accepted: the run continues under the target.
func (r *run) handOff() {
	ts := &r.team
	ts.mu.Lock()
	to, reason := ts.to, ts.reason
	ts.to, ts.reason, ts.overMax = "", "", false
	ts.mu.Unlock()
	target := r.a.team.agents[to]
	r.journal.emit(EventHandoff, &HandoffData{From: r.cfg.Name, To: to, Depth: len(ts.chain) + 1, Reason: reason})
	ts.chain = append(ts.chain, to)
	r.cfg = &target.cfg
	r.journal.mu.Lock()
	r.journal.agent = to
	r.journal.mu.Unlock()
	r.in.SystemPromptOverride = target.cfg.SystemPrompt
	r.policy = target.cfg.ToolPolicy.merge(r.in.ToolPolicy).withDefaults()
	r.offerTools(nil, nil)
}

type askDepthKey struct{}

// ask runs b on a session of its own with the call's question and returns its answer.
// b's events reach this run's stream with their path (nestedEmit). A call of b's that
// waits for approval interrupts this run too (ErrApprovalPending: the ask keeps no
// result); the run that answers the approval re-runs the ask (L14), which resumes b's
// session with the answer instead of asking again.
func (r *run) ask(ctx context.Context, b *Agent, c ToolCall) (ToolResult, error) {
	var args struct{ Question string }
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || strings.TrimSpace(args.Question) == "" {
		return ErrorResult("Error: ask_" + b.cfg.Name + " needs a question"), nil
	}
	depth, _ := ctx.Value(askDepthKey{}).(int)
	if depth+1 > r.maxHandoffs {
		return ErrorResult(fmt.Sprintf("Error: ask_%s refused: asks nest %d deep at most (max_handoffs)", b.cfg.Name, r.maxHandoffs)), nil
	}
	in := RunInput{SessionID: r.in.SessionID + ":ask:" + c.ID, RunID: r.in.RunID + ":ask:" + c.ID, TraceID: r.in.TraceID, User: r.in.User}
	if len(r.in.Approvals) > 0 && b.awaitsApproval(ctx, in.SessionID) {
		in.Approvals = r.in.Approvals // the answer the interrupted ask waited for
	} else {
		in.Messages = []Message{UserMessage(args.Question)}
	}
	res, err := b.RunWith(context.WithValue(ctx, askDepthKey{}, depth+1), in, r.nestedEmit(b.cfg.Name))
	r.team.mu.Lock()
	r.subRuns++
	r.team.mu.Unlock()
	if res.Status == StatusInterrupted && res.Reason == ReasonApprovalRequired {
		return ToolResult{}, ErrApprovalPending
	}
	if err != nil && res.Final == nil {
		return ErrorResult(fmt.Sprintf("Error: %s did not answer (%s/%s): %v", b.cfg.Name, res.Status, res.Reason, err)), nil
	}
	if res.Final == nil {
		return ErrorResult(fmt.Sprintf("Error: %s did not answer (%s/%s)", b.cfg.Name, res.Status, res.Reason)), nil
	}
	text := res.Final.Text()
	if len(res.Output) > 0 {
		text = string(res.Output)
	}
	return TextResult(text), nil
}

// awaitsApproval reports whether the session's last run ended waiting for an approval.
func (a *Agent) awaitsApproval(ctx context.Context, session string) bool {
	entries, err := a.cfg.Store.Load(ctx, session)
	if err != nil {
		return false
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i].Event; e != nil && e.Type == EventRunFinished {
			d, ok := e.Data.(*RunFinishedData)
			return ok && d.Status == StatusInterrupted && d.Reason == ReasonApprovalRequired
		}
	}
	return false
}

// offerTools sets the tools offered to the acting agent's model: its own (allowed and
// ordered as given), the run's client tools, and its team tools.
func (r *run) offerTools(allowed, order []string) {
	if r.toolsOff() {
		r.offered = nil
		return
	}
	r.offered = r.groupOffered(r.cfg.Tools.offered(allowed, order))
	if len(r.in.ClientTools) > 0 {
		r.offered = append(r.offered[:len(r.offered):len(r.offered)], r.in.ClientTools...)
	}
	if specs := r.teamSpecs(); len(specs) > 0 {
		r.offered = append(r.offered[:len(r.offered):len(r.offered)], specs...)
	}
}
