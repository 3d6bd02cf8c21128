// Package host turns an agent.toml into a running agent: it takes the manifest that
// manifest decoded and checked, opens the session store, loads the Wasm plugins into
// the sandbox, starts the provider processes and MCP servers, and wires them into the
// loop. It is the only package that knows all the others: it adapts a sandbox plugin to a
// loop.Tool (or hook) and a provider client to a loop.Model.
//
// It must not hold loop logic (that is loop's), Wasm details (sandbox's) or manifest
// checks (manifest's: what can only be checked once things run, such as the tools a
// workflow step names, is reported at the manifest's key through manifest.ErrorAt). It
// must not link a database client: a PostgreSQL store is the store.Driver of the program
// that imports store/postgres. What it adds is configuration, adaptation and lifetimes:
// what to start, in which order, and how to shut it all down.
package host
