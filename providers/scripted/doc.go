// Package scripted is a deterministic model provider that replays a fixture
// (providers/README.md): one turn per model call, in order, with optional expectations
// checked against each request. It backs the offline demo and the tests of
// everything above the provider boundary.
//
// Model implements providers.Provider, so the same fixture can run in-process
// (scripted.New) or as the adapter binary cmd/agenthost-provider-scripted,
// which reads the fixture named by the `script` option.
//
// It must not reach the network or read anything but its fixture.
package scripted
