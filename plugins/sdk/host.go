package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotInWasm is what the host functions return outside a Wasm plugin
// (for instance in a plain `go test` of a plugin's logic).
var ErrNotInWasm = errors.New("sdk: host functions exist only in a wasip1 plugin")

// Log levels of notify_logging_message (MCP LoggingLevel).
const (
	LevelDebug   = "debug"
	LevelInfo    = "info"
	LevelWarning = "warning"
	LevelError   = "error"
)

// loggingParams is the MCP LoggingMessageNotificationParam.
type loggingParams struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// progressParams is the MCP ProgressNotificationParam.
type progressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// Ask sends one user prompt to the host model (create_message; the plugin
// needs the model permission) and returns the text of the answer.
func Ask(systemPrompt, prompt string, maxTokens int) (string, error) {
	res, err := CreateMessage(CreateMessageRequest{
		SystemPrompt: systemPrompt,
		MaxTokens:    maxTokens,
		Messages:     []SamplingMessage{{Role: "user", Content: Content{Type: "text", Text: prompt}}},
	})
	if err != nil {
		return "", err
	}
	return res.Content.Text, nil
}

// CreateMessage asks the host model (needs the model permission). A refusal
// by the host ends the plugin call; the error is for a bad answer.
func CreateMessage(req CreateMessageRequest) (CreateMessageResult, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return CreateMessageResult{}, fmt.Errorf("create_message: %w", err)
	}
	out, err := hostCreateMessage(in)
	if err != nil {
		return CreateMessageResult{}, err
	}
	var res CreateMessageResult
	if err := json.Unmarshal(out, &res); err != nil {
		return CreateMessageResult{}, fmt.Errorf("create_message: answer %q is not a CreateMessageResult: %w", out, err)
	}
	return res, nil
}

// Log sends a notify_logging_message to the host: a plugin_log event of the run, shown
// by `agenthost run` at --log-level and above (level is debug, info, notice, warning,
// error, critical, alert or emergency).
func Log(level, message string) error {
	b, _ := json.Marshal(loggingParams{Level: level, Data: message})
	return hostNotify("notify_logging_message", b)
}

// Progress sends a notify_progress to the host; total 0 means unknown.
func Progress(progress, total float64, message string) error {
	b, _ := json.Marshal(progressParams{ProgressToken: 0, Progress: progress, Total: total, Message: message})
	return hostNotify("notify_progress", b)
}

// StreamResult sends a piece of the current tool call's result to the host while the
// call runs (host function stream_result): during a run it is a tool_result_delta event,
// shown live and never stored. The result the tool returns stays the call's result, whole:
// return all of it, not the part not yet streamed. Outside a run, or in a run with
// guardrails, the piece is dropped. Empty text sends nothing.
func StreamResult(text string) error {
	if text == "" {
		return nil
	}
	return hostStreamResult([]byte(text))
}

// ElicitResult is the MCP ElicitResult: what the user answered (accept, decline or
// cancel) and, when they accepted, the content of the form.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Elicit asks the user of the call being served for input (create_elicitation):
// message is shown, schema is the form's requestedSchema (a flat object of primitive
// properties, as MCP allows). Under `agenthost mcp serve` the MCP client that made the
// call asks its user when it declared the elicitation capability; otherwise (a run, a
// client without it) the answer is a decline.
func Elicit(message string, schema json.RawMessage) (ElicitResult, error) {
	in, err := json.Marshal(map[string]any{"message": message, "requestedSchema": schema})
	if err != nil {
		return ElicitResult{}, fmt.Errorf("create_elicitation: %w", err)
	}
	out, err := hostElicit(in)
	if err != nil {
		return ElicitResult{}, err
	}
	var res ElicitResult
	if err := json.Unmarshal(out, &res); err != nil {
		return ElicitResult{}, fmt.Errorf("create_elicitation: answer %q is not an ElicitResult: %w", out, err)
	}
	return res, nil
}
