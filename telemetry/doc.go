// Package telemetry makes what agenthost does visible to operators: OpenTelemetry traces
// following the GenAI semantic conventions (invoke_agent per run, chat per model call,
// execute_tool per tool call, spans for hook, guardrail and permission plugins and for
// loading a plugin into the sandbox), metrics (runs, model and tool calls, tokens, cost,
// retries, timeouts, latencies) exported as Prometheus text, and the trace and span ids
// that structured logs carry.
//
// A *Telemetry is made once per process (New) from the standard OTEL_EXPORTER_OTLP_*
// variables or the manifest's [telemetry] table. A run started with StartRun carries it
// on its context, and the host's model, tool and hook adapters find it there
// (FromContext): code that runs outside a traced run, or in a process without telemetry,
// pays one context lookup and nothing else.
//
// Prompts, completions, tool arguments and results are recorded in spans only with
// CaptureContent: they are the users' data. So are the texts of failed tools, hooks and
// runs (a tool's error result is its output; an error can quote what it failed on):
// without CaptureContent a failed span's status says only its error.type.
//
// This package must not be imported by loop, sandbox, providers or store: it observes
// them from the host, through the loop's public types.
package telemetry
