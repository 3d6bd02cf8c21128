package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// Door is the one entrance to the host. Every surface — the HTTP API and AG-UI (through
// Runner), A2A, `mcp serve` over stdio and HTTP, the CLI's run, plugins call and
// workflow, workflow tool and prompt steps, cluster workers, plugins' create_message
// and MCP sampling — comes in through it to start or resume a run (Run), to call a tool
// outside a run (CallTool, CallPluginTool) or to have the model answer a plugin or an
// MCP server (Sample, sampling.go), with the caller's principal. What every entrance owes is applied
// here and nowhere else:
//
//   - authorisation: authorize, which asks access.Authorize (the session's owner and
//     shares, access.Allowed's rule), and the claim of a new session for its user;
//   - the audit record of the run's start and end, naming the principal (its name as
//     the actor, its id in the detail);
//   - the telemetry span (invoke_agent, with enduser.id);
//   - the ledger: the loop keeps one per top-level run, and everything the run calls
//     (plugins' create_message and MCP sampling, nested runs through Sample; embeddings)
//     is admitted and charged on it;
//   - one consistent plugin set for the whole entry (a reload swaps the next one in);
//   - memory extraction after a run;
//   - admission (admission.go, the [admission] table): the runs in flight, the queue
//     and each user's share; a refusal is a *loop.OverloadError (loop.ErrOverloaded).
//
// A surface translates its wire format, passes the principal it authenticated, and
// maps the door's refusals (access.ErrNotVisible, access.ErrNotAllowed,
// loop.ErrOverloaded) to its own (404, 403, 429): it holds no policy.
type Door struct{ h *Host }

// Door is the host's one entrance (see Door).
func (h *Host) Door() *Door { return &Door{h: h} }

// Local is the principal of the machine's own user: the CLI, and a cluster worker that
// runs a job the server admitted. Whoever can open the store administers it, so it acts
// as an operator; user names whom the runs are for (--user: a user's name or id, looked
// up when the store keeps users; a name no user has is a label and its own identity).
func (h *Host) Local(ctx context.Context, user string) access.Principal {
	p := access.Principal{Name: user, Role: access.RoleOperator}
	if access.IsID(user) {
		p.ID = user
	}
	if as, ok := h.Access(); ok && user != "" && p.ID == "" {
		if u, found, err := access.Lookup(ctx, as, user); err == nil && found {
			p.ID = u.ID
		}
	}
	return p
}

// identity is what ownership and a run's user record of p: the user's id, or the name
// of a caller that has none (a label the CLI runs under).
func identity(p access.Principal) string {
	if p.ID != "" {
		return p.ID
	}
	return p.Name
}

// principalOf is the caller on ctx (a surface put it there with access.WithPrincipal),
// or the local user named user.
func (h *Host) principalOf(ctx context.Context, user string) access.Principal {
	if p, ok := access.PrincipalFrom(ctx); ok {
		return p
	}
	return h.Local(ctx, user)
}

// Run starts or resumes a run for p on the agent of the moment, with the manifest's run
// defaults where in sets none; see Door for what it applies.
func (d *Door) Run(ctx context.Context, p access.Principal, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error) {
	return d.run(ctx, p, in, emit, true)
}

func failedRun(in loop.RunInput, err error) (loop.RunResult, error) {
	return loop.RunResult{SessionID: in.SessionID, RunID: in.RunID, Status: loop.StatusFailed, Reason: loop.ReasonError, Err: err}, err
}

func (d *Door) run(ctx context.Context, p access.Principal, in loop.RunInput, emit func(loop.Event), extract bool) (loop.RunResult, error) {
	h := d.h
	g := h.live.hold()
	if g == nil {
		return failedRun(in, fmt.Errorf("a run needs a provider: %w", errNoModel))
	}
	defer h.live.release(g)
	a, err := h.runDefaults(&in)
	if err != nil {
		return failedRun(in, err)
	}
	newIDs(&in)
	if err := d.admit(ctx, p, &in); err != nil {
		return failedRun(in, err)
	}
	ctx, leave, err := d.enter(ctx, &in, a.Name, emit)
	if err != nil {
		return failedRun(in, err)
	}
	defer leave()
	ctx = withGeneration(access.WithPrincipal(ctx, p), g)
	ctx, end := h.tel.StartRun(ctx, a.Name, &in)
	ended, err := h.auditRun(ctx, p, &in, scheduleDetail(ctx, map[string]string{"agent": a.Name}))
	if err != nil {
		res, err := failedRun(in, err)
		end(res)
		return res, err
	}
	markSpan(ctx, p)
	res, err := g.agent.RunWith(ctx, in, d.observe(ctx, emit))
	end(res)
	ended(res)
	if extract {
		d.extract(ctx, g, in, a.Name, res)
	}
	return res, err
}

// runDefaults applies the run defaults of the agent in.Agent names (output_schema,
// allowed_tools, metadata) where in sets none, and returns its configuration.
func (h *Host) runDefaults(in *loop.RunInput) (manifest.AgentConfig, error) {
	a := h.Manifest.Agent
	if in.Agent != "" { // another entry agent: its own run defaults
		other, ok := h.Manifest.AgentConfig(in.Agent)
		if !ok {
			return a, fmt.Errorf("no agent %q (agents: %s)", in.Agent, strings.Join(h.Manifest.AgentNames(), ", "))
		}
		a = other
	}
	if len(in.OutputSchema) == 0 && len(a.OutputSchema) > 0 {
		in.OutputSchema = json.RawMessage(a.OutputSchema)
	}
	if in.AllowedTools == nil && a.AllowedTools != nil {
		in.AllowedTools = a.AllowedTools
	}
	if len(a.Metadata) > 0 {
		md := maps.Clone(a.Metadata)
		maps.Copy(md, in.Metadata)
		in.Metadata = md
	}
	return a, nil
}

// CallOptions say how to reach the user of a tool call that no model made: the
// surface's side of Door.CallTool.
type CallOptions struct {
	// SessionID is the session the call is stored in and the sandbox keys instances by
	// (isolation "session"); `mcp serve` uses one per MCP session. "" starts a new one.
	SessionID string
	// Approver asks the surface's user when the policy asks (an MCP client's
	// elicitation, the terminal); nil refuses every call that needs approval, with a
	// clear error.
	Approver loop.Approver
	// Timeout bounds the call when tighter than the agent's tool_policy.timeout.
	Timeout time.Duration
	// OnEvent receives the call's events (plugin_log and progress included), in order.
	OnEvent func(loop.Event)
	// Client answers the sampling and elicitation the call's plugins ask for (client.go);
	// nil: elicitations are declined and sampling is the host model's.
	Client *Client
}

// CallTool takes one call of a tool, named as the model sees it, for p through the
// agent's tool pipeline (loop.Agent.DirectCall, rule L22): the argument check, the
// tool_args and tool_result guardrails, the permission plugins, require_approval and
// approval_default, the caps and the deadline are exactly a model's call's, and the
// call and its result are stored in opts.SessionID. Without a provider (`mcp serve`,
// `plugins call`) the agent is built with a model that refuses to be called: the
// pipeline needs no model. See Door for what else it applies.
func (d *Door) CallTool(ctx context.Context, p access.Principal, name string, args []byte, opts CallOptions) (loop.ToolResult, loop.RunResult) {
	h := d.h
	g := h.live.hold()
	a := h.toolAgent.Load()
	if g != nil {
		defer h.live.release(g)
		a = g.agent
	}
	if len(args) == 0 || string(args) == "null" { // MCP clients send null for no arguments
		args = []byte("{}")
	}
	in := loop.RunInput{SessionID: opts.SessionID}
	newIDs(&in)
	fail := func(err error) (loop.ToolResult, loop.RunResult) {
		res, _ := failedRun(in, err)
		return loop.ErrorResult("Error: the call was not made: " + err.Error()), res
	}
	if err := d.admit(ctx, p, &in); err != nil {
		return fail(err)
	}
	agent := h.Manifest.Agent.Name
	ctx, leave, err := d.enter(ctx, &in, agent, opts.OnEvent)
	if err != nil {
		return fail(err)
	}
	defer leave()
	ctx = withClient(withGeneration(access.WithPrincipal(ctx, p), g), opts.Client)
	ctx, end := h.tel.StartRun(ctx, agent, &in)
	ended, err := h.auditRun(ctx, p, &in, map[string]string{"agent": agent, "tool": name})
	if err != nil {
		out, res := fail(err)
		end(res)
		return out, res
	}
	markSpan(ctx, p)
	out, res := a.DirectCall(ctx, loop.CallInput{SessionID: in.SessionID, RunID: in.RunID, TraceID: in.TraceID, User: in.User,
		Call: loop.ToolCall{Name: name, Arguments: string(args)}, Approver: opts.Approver, Timeout: opts.Timeout}, d.observe(ctx, opts.OnEvent))
	end(res)
	ended(res)
	return out, res
}

// admit is the door's authorisation of an entry for p on in.SessionID: p may start
// runs at all (not a viewer); a user who is not admin or operator runs as themselves
// (runUser, authorize.go);
// a new session is claimed for the run's user (the first claim wins), an ownerless one
// with history is an admin's or operator's, and any other needs Write on it
// (authorize).
func (d *Door) admit(ctx context.Context, p access.Principal, in *loop.RunInput) error {
	if !access.MayStart(p) {
		return fmt.Errorf("%w: %s has the %s role and may not start runs", access.ErrNotAllowed, p.Name, p.Role)
	}
	if err := d.runUser(ctx, p, in); err != nil {
		return err
	}
	as, ok := d.h.Access()
	if !ok {
		return nil
	}
	owner, err := as.Owner(ctx, in.SessionID)
	if err != nil {
		return fmt.Errorf("session owner: %w", err)
	}
	if owner == "" {
		runs, err := d.h.Store.Runs(ctx, in.SessionID)
		if err != nil {
			return fmt.Errorf("session runs: %w", err)
		}
		if len(runs) == 0 && in.User == "" {
			return nil // a new session no one is named for: an admin's or operator's
		}
		if len(runs) == 0 {
			if _, err := as.ClaimOwner(ctx, in.SessionID, in.User); err != nil {
				return fmt.Errorf("claim session: %w", err)
			}
		}
	}
	return d.authorize(ctx, p, access.Write, in.SessionID)
}

// authorize is the one decision of who may do what to a session (access.Authorize, on
// the store's owners and shares); a host whose store keeps no users allows everything.
// A refusal does not name the session: the same answer whether it exists or not.
func (d *Door) authorize(ctx context.Context, p access.Principal, a access.Action, session string) error {
	as, ok := d.h.Access()
	if !ok {
		return nil
	}
	return access.Authorize(ctx, as, p, a, session)
}

// observe is emit, with the run's events fed to the host's metrics when it has them.
func (d *Door) observe(ctx context.Context, emit func(loop.Event)) func(loop.Event) {
	tel := d.h.tel
	if tel == nil {
		return emit
	}
	return func(e loop.Event) {
		tel.Observe(ctx, e)
		if emit != nil {
			emit(e)
		}
	}
}

// markSpan names the principal on the entry's span (OpenTelemetry's enduser.id).
func markSpan(ctx context.Context, p access.Principal) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("enduser.id", cmpOr(p.ID, p.Name)), attribute.String("enduser.role", string(p.Role)))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// newIDs names a run that has no run or session id yet, so its audit record, its span
// and its claim name the ids the loop will use.
func newIDs(in *loop.RunInput) {
	if in.RunID == "" {
		in.RunID = "run_" + shortID()
	}
	if in.SessionID == "" {
		in.SessionID = "ses_" + shortID()
	}
}

func shortID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// extract runs the memory plugins' extract after a run (memoryplugins.go), with the
// plugin set the run had, on a context the run's end does not cancel; what fails is
// written to the host's stderr.
func (d *Door) extract(ctx context.Context, g *generation, in loop.RunInput, agent string, res loop.RunResult) {
	if res.RunID == "" {
		return
	}
	d.h.extractMemories(context.WithoutCancel(ctx), g, in, agent, res, func(err error) {
		if d.h.opts.Stderr != nil {
			fmt.Fprintf(d.h.opts.Stderr, "agenthost: %v\n", err)
		}
	})
}
