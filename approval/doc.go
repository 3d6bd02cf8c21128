// Package approval compiles and evaluates the manifest's approval rules ([[approvals]]):
// each a CEL condition over a tool call (the same CEL as workflows) and a decision,
// allow, ask or deny; the first rule whose condition holds decides. The loop asks it
// through loop.ApprovalPolicy (the host's side); the loop alone decides what a verdict
// means (loop/approvals.go).
//
// It must not ask a human, store anything, or decide without a rule: a condition that
// cannot be evaluated is an error (the loop denies), never a match or a pass.
package approval
