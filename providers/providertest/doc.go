// Package providertest is the replay harness the HTTP adapters' tests share
// (providers/openai, providers/anthropic): a loopback server that answers every request
// with a recorded HTTP response from the adapter's testdata and keeps what it received,
// and the helpers that run a call through the real adapter process and compare its
// events and typed error exactly.
//
// A recording is one raw HTTP/1.1 response per `.http` file (status line, headers, a
// blank line, the body), read with http.ReadResponse and replayed as it is; a file named
// cut.http is replayed and then the connection is aborted, as a network cut mid-stream.
//
// It is imported by tests only. It must not import host, loop or sandbox, nor know any
// one provider's API: what a recording holds and what it must become is the test's.
package providertest
