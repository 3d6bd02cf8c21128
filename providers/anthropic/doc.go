// Package anthropic is the provider adapter for Anthropic's Messages API, on the
// official SDK (github.com/anthropics/anthropic-sdk-go). It runs as its own process
// (cmd/agenthost-provider-anthropic) and speaks the provider protocol of package
// providers: streamed text, tool use with input JSON in fragments, extended thinking
// (the signed thinking blocks are returned to the host as reasoning_state and sent back
// unchanged with their assistant message, as the API requires), images, prompt-cache
// token counts and normalised stop reasons and errors.
//
// Configuration: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and ANTHROPIC_MODEL, or the
// manifest's options api_key, base_url, model, max_tokens (default 4096; the API
// requires one), thinking_budget (tokens of extended thinking; 0 or unset: off) and
// cache ("system", the default, marks the system prompt and tools for prompt caching;
// "off" does not).
//
// It must not retry: the loop owns retries and backoff (the SDK's own are turned off).
package anthropic
