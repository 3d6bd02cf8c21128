// Package providers is the boundary between the agenthost host and model
// providers that run as separate processes.
//
// It holds three things:
//
//   - the protocol (proto/provider.proto, generated into package providerpb and
//     re-exported here as type aliases such as ChatRequest and ChatEvent);
//   - the host side: Start launches an adapter executable with
//     hashicorp/go-plugin (gRPC on a Unix socket in a directory private to the user,
//     AutoMTLS only where that cannot be made sure; optional sha256 pin) and returns a
//     Client whose Stream yields ChatEvents and typed *Error values;
//   - the adapter side: Serve turns a Provider implementation into an adapter
//     binary, so an adapter's main is a few lines.
//
// The adapters themselves live in sub-packages (providers/openai,
// providers/anthropic, providers/scripted), each with a cmd/ directory for its binary;
// providers/providertest is the replay harness their tests share.
//
// This package must not import loop, host or sandbox: it defines its own
// protocol types, and host adapts a Client to loop.Model. It performs no
// retries either; the loop owns retry policy and uses Error.Retryable and
// Error.RetryAfter to decide.
package providers
