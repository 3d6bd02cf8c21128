// Package workflow runs declared workflows: named DAGs of steps ([workflows.NAME] in
// agent.toml) that call tools, prompt the agent, or wait for a person's approval, with
// dependencies, conditions and fan-out written in CEL.
//
// Definitions are compiled once (Compile): ids, dependencies, cycles, step kinds, tools
// and every CEL expression are checked before anything runs, and the errors name the
// manifest key. A run (Run) starts every step whose dependencies have ended, up to
// Options.Parallel at once, and stores each step's start and end (Options.State) before it
// goes on, so a run killed at any point resumes (same run id) without doing a finished
// step again; a step that was running when the process died runs again.
//
// What it must not do: call a tool, a model or a person itself. Tool steps go through
// Options.Call (the host's one tool pipeline: guardrails, permissions, approvals),
// prompt steps through Options.Prompt (a run of the agent), approvals through
// Options.Approve. It imports no host, server or cmd package.
package workflow
