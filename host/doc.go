// Package host turns an agent.toml into a running agent: it decodes the manifest
// strictly (every error names file, line and key), verifies sha256 pins, loads the Wasm
// plugins into the sandbox, starts the provider process, opens the session store, and
// wires them into the loop. It is the only package that knows all the others: it adapts a
// sandbox plugin to a loop.Tool (or hook) and a provider client to a loop.Model.
//
// It must not hold loop logic (that is loop's) or Wasm details (sandbox's); what it adds
// is configuration, adaptation and lifetimes: what to start, in which order, and how to
// shut it all down.
package host
