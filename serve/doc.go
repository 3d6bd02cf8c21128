// Package serve is the composition `agenthost serve` and `agenthost worker` run: one
// host, the HTTP surface (AG-UI, REST, A2A, the console), the cluster's River workers
// when asked, OIDC when the manifest declares it, retention and plugin reloads. A Go
// program that embeds agenthost serves an agent with the same three calls the command
// makes (Open, then Run, or StartCluster for a worker), so the command holds only flags
// and presentation.
//
// It must not hold policy (who may do what is decided in host and access) or parse flags
// and environment variables (cmd/agenthost does, and hands over plain values); it
// composes surfaces and never reaches into their wire formats.
package serve
