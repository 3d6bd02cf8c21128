// Package loop is the agent loop: it asks a model, runs the tools the model calls, and
// repeats until the model gives a final answer or a limit, a policy or a human stops it.
// It is pure Go and knows nothing of Wasm, gRPC or TOML; the host package adapts sandbox
// plugins and provider processes to the interfaces here (Model, Tool, ContextStrategy,
// TerminationHook, Guardrail, Approver, SessionStore).
//
// # A run
//
// Agent.Run, RunWith and RunStream start a run on a session. The run loads the session's
// head from the SessionStore (head.go: its messages and compactions and where its
// numberings stand, not its events, which only what shows them reads), stores the system prompt once as the session's first entry
// (rule L1), checks the new user input against the guardrails, and then iterates (L2):
//
//  1. check cancellation, then the limits (iterations, tool rounds, duration, token and
//     cost budgets); a limit ends the run with one more model call, tools off, asking for
//     a summary, which becomes the final answer with status incomplete (L9);
//  2. build the model input with the context strategy chain (L11; by default the full
//     history with old tool outputs trimmed, and compaction on a context_overflow error);
//  3. call the model, retrying rate limits, overloads and transport errors with backoff
//     and the provider's Retry-After (L3);
//  4. store the assistant message exactly as returned and emit its events;
//  5. decide (L4): tool calls present ⇒ duplicate and cap checks (L8), termination hooks,
//     then run the calls (L5, L6) and go round again; no tool calls ⇒ BeforeFinal hooks
//     may send the model back to work (L12), structured output is decoded and validated
//     (L10), and the final answer ends the run.
//
// A tool result marked Done ends the run at once (L7). Abort(session, runID) or a cancelled context
// stops a run between steps and before each tool; the context reaches the model and every
// tool (L13). Nothing is lost on abort or crash: every message is stored as it happens,
// and a run resumed on the session executes only the tool calls that have no stored
// result (L14).
//
// The model's stop reason is carried into the run (L15): calls of an answer cut by
// max_tokens never run. Client tools (L16) are offered but left to the caller, who
// answers them in the next run. Event seq is gapless per session (L17); budgets are
// checked before a model call (L18); input is repaired to valid UTF-8 (L19).
//
// # Tool calls
//
// Each call goes through: unknown tool ⇒ error tool message "Error: Unknown tool 'x'";
// arguments that are not JSON are passed through raw and shown as {"_raw": "..."};
// arguments that fail the tool's JSON schema ⇒ error tool message naming the field;
// tool_args guardrails; the PermissionFunc (allow, deny or ask); approval for tools listed
// in RequireApproval ("*" = all) and ApprovalDefault for the others
// (state awaiting_human). Errors, panics and timeouts of a tool become error tool messages
// and the run goes on. With MaxParallel > 1 the calls of one response run at once: their
// step_start and tool_call events come first, in call order, then each tool_result and
// step_complete, also in call order, which is the order results are stored in.
//
// # Events and the store
//
// Every state transition emits a status event; the full vocabulary is in events.go and
// docs/loop.md, which states every rule (L1–L24) the tests cite. Events are stored in
// the session next to the messages (model_delta excepted:
// its content is in the assistant_message that follows), so a stored session replays the
// same events a live client saw. Stores number entries gaplessly per session and refuse a
// sequence number they already hold, which is how a second writer is caught; an Agent also
// refuses a second concurrent run on one session (ErrSessionBusy). Across processes, a
// store that implements Leaser holds a per-session lease for each live run (lease.go);
// RecoverRuns and a starting run close only runs whose lease is dead (recover.go).
//
// # What this package must not do
//
// It must not import Wasm, gRPC, TOML or HTTP code, reach the network, or read files.
// It must not re-shape what the model returned, and it must not panic on bad input: a nil
// model is an error from New; bad messages, a panicking tool or model, an empty response
// and garbage arguments end in an error result or a failed run with a clear message.
package loop
