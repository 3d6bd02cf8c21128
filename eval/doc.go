// Package eval runs an evaluation dataset against an agent: each case is a run on a
// fresh session through the host's normal run path (so the loop's rules, the tool
// pipeline, the ledger and the store apply as in production), checked against the case's
// expectations and graded by Wasm grader plugins or a model judge; the results come as a
// report (table, JSON, JUnit XML, HTML) that can be compared with a baseline.
//
// It must not import the host, the server or cmd: the caller gives it a way to run
// (Options.Run) and its graders (Options.Grade), so the package judges runs and nothing
// else. A judge is itself a run (Options.Run, no tools, an output schema, a token
// budget), so what a judge spends is a run's spend.
package eval
