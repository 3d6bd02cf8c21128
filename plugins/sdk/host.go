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
