// Package sandbox runs untrusted WebAssembly plugins for agenthost: tools,
// and the hooks (context strategies, termination hooks, guardrails) of the
// agent loop. It is built on the Extism Go SDK and wazero's compiler engine.
//
// What it does:
//
//   - Compiles each plugin once (Runtime keeps a compilation cache, on disk
//     with RuntimeOptions.CacheDir, so a restart does not recompile) and
//     serves calls from a bounded pool of instances (Config.PoolSize); an
//     instance serves one call at a time and is discarded after any failure.
//     Permissions.Isolation says which calls may share one (its globals and
//     memory): "pooled" any, "session" (default) only calls of the same
//     WithSession id, "call" none.
//   - Keeps instantiation cheap, since "session" and "call" isolation make it
//     frequent: a disposed instance's linear memories serve the next instance
//     of the plugin, cleared first (memory.go), and modules are compiled with
//     their data segments merged where that provably changes nothing
//     (internal/wasmbin). Config.Preinit goes further (preinit.go): _initialize
//     runs once, at Load, and instances start from a module whose memory and
//     globals are its result; shapes it cannot prove safe are refused
//     (PreinitOn) or served as built (PreinitIfSafe, a manifest's default).
//   - Denies by default. Permissions grant memory, a per-call timeout (always
//     on, and ending waits in host calls too: sleeps, HTTP; blocking.go; it
//     includes the wait for an instance, after which a call answers "busy"),
//     input/output sizes, HTTP hosts (checked on every connection,
//     redirects included), directories, environment variables, config, the
//     host model and a per-plugin KV. Guests get real clocks and crypto
//     randomness.
//   - Confines every filesystem operation to its mount in one step: each
//     WASI path call is one os.Root call (no check-then-open, no symlink or
//     ".." out, whatever a parallel call does to the tree); a guest cannot
//     create a symlink leading out; read-only mounts refuse every write.
//   - Returns only valid UTF-8 from a plugin (invalid bytes become U+FFFD), and
//     gives an mcp plugin arguments that are not a JSON object as {"_raw":…}.
//   - Speaks three tool ABIs: "mcp" (hyper-mcp / mcp.run v1 and v2), "extism"
//     (any export declared as a tool) and "wasi" (a WASI command: arguments
//     JSON on stdin, result on stdout). Hooks are raw calls (CallExport).
//     Load chooses the ABI once, as one implementation of an internal
//     interface (abi.go: mcp v1, mcp v2, extism, wasi), and every later step
//     (compile, tools, calls, hooks, close) goes through it: nothing else
//     tests which ABI a plugin has.
//   - Reports a plugin's failure as what happened: "timed out after 2s",
//     "memory limit 32 MiB exceeded", "host example.com:443 not in
//     allowed_hosts", "input 3 MiB exceeds max_input 1 MiB", "exited with
//     code 3", "trapped: unreachable". InvokeTool turns it into an error
//     result (the MCP CallToolResult with isError); CallExport returns it as
//     a *Fault. A plugin never crashes or blocks the host.
//   - Compiles exactly the bytes a sha256 pin (Config.SHA256) was checked on:
//     a module file is read once, and only if it is a regular file (module.go).
//
// What it must not do: know about the agent loop, the manifest (agent.toml),
// sessions (beyond an opaque key for instance reuse) or providers; open a
// plugin's path any way but through its mount's os.Root. It imports none of loop/, host/ or providers/; the
// host package adapts a Plugin to the loop's Tool and hook interfaces, and
// implements Host (model, notifications, KV) on top of its session store.
//
// Host functions, in the "extism:host/user" namespace (Extism memory
// offsets as i64; see hostfuncs.go for the exact contract):
//
//	kv_get(key i64) -> i64             value, 0 if absent          (needs KV)
//	kv_set(key i64, value i64)         value 0 stores ""           (needs KV)
//	kv_delete(key i64)                                             (needs KV)
//	create_message(req i64) -> i64     MCP sampling, JSON in/out   (needs Model)
//	notify_progress(params i64)        → Host.Notify("notifications/progress")
//	notify_logging_message(params i64) → Host.Notify("notifications/message")
//	stream_result(text i64)            → Host.Notify(MethodResultDelta)
//	create_elicitation(i64) -> i64, list_roots() -> i64, notify_resource_updated(i64),
//	notify_tool_list_changed(), notify_prompt_list_changed(),
//	notify_resource_list_changed()     stubs, so hyper-mcp plugins link
package sandbox
