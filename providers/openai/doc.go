// Package openai is the provider adapter for OpenAI-compatible Chat
// Completions servers (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, DeepSeek,
// ...), built on openai-go v3 with streaming.
//
// It translates a providers.ChatRequest into a streaming Chat Completions
// request, and the chunks back into provider events: text, reasoning (the
// non-standard reasoning_content / reasoning delta fields some servers send),
// tool-call fragments, usage and a normalised finish reason. HTTP failures
// become typed providers.Error values (see errors.go).
//
// Options (agent.toml `options`, delivered by Configure): base_url, api_key,
// model (used when a request names none) and max_tokens_field
// ("max_tokens", the default, or "max_completion_tokens") and send_reasoning
// (unset: earlier reasoning is not sent back; "reasoning_content" or "reasoning":
// it goes back on its assistant message in that field, for servers that read it),
// and store ("true": the request asks OpenAI to store the completion, and carries the
// run's metadata; see metadata.go for where metadata goes without it).
// An image in a tool result travels in a user message right after the tool
// messages (Chat Completions tool messages carry text only). base_url and
// api_key fall back to OPENAI_BASE_URL and OPENAI_API_KEY.
//
// The SDK's own retries are disabled: the agent loop owns retry policy. The
// package must not import loop, host or sandbox.
package openai
