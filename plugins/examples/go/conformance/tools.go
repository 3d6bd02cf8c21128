//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// pngPixel is a 1×1 red PNG; wavSilence a WAV header with one silent sample.
const (
	pngPixel   = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavSilence = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="
)

var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

func fixed(res sdk.CallToolResult) func(json.RawMessage) (sdk.CallToolResult, error) {
	return func(json.RawMessage) (sdk.CallToolResult, error) { return res, nil }
}

func init() {
	sdk.AddToolSchema("test_simple_text", "Returns one text block.", noArgs,
		fixed(sdk.Text("This is a simple text response for testing.")))
	sdk.AddToolSchema("test_image_content", "Returns one image block (a 1x1 PNG).", noArgs,
		fixed(sdk.CallToolResult{Content: []sdk.Content{{Type: "image", Data: pngPixel, MimeType: "image/png"}}}))
	sdk.AddToolSchema("test_audio_content", "Returns one audio block (a WAV).", noArgs,
		fixed(sdk.CallToolResult{Content: []sdk.Content{{Type: "audio", Data: wavSilence, MimeType: "audio/wav"}}}))
	sdk.AddToolSchema("test_embedded_resource", "Returns an embedded resource.", noArgs,
		fixed(sdk.CallToolResult{Content: []sdk.Content{{Type: "resource",
			Resource: json.RawMessage(`{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}`)}}}))
	sdk.AddToolSchema("test_multiple_content_types", "Returns text, an image and an embedded resource.", noArgs,
		fixed(sdk.CallToolResult{Content: []sdk.Content{{Type: "text", Text: "Multiple content types test:"},
			{Type: "image", Data: pngPixel, MimeType: "image/png"},
			{Type: "resource", Resource: json.RawMessage(`{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}`)}}}))
	sdk.AddToolSchema("test_error_handling", "Always fails (isError).", noArgs,
		fixed(sdk.ErrorText("This tool intentionally returns an error for testing")))
	sdk.AddToolSchema("test_tool_with_logging", "Logs three lines while it runs.", noArgs, func(json.RawMessage) (sdk.CallToolResult, error) {
		for i, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			sdk.Log(sdk.LevelInfo, m)
		}
		return sdk.Text("Tool with logging executed successfully"), nil
	})
	sdk.AddToolSchema("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", noArgs, func(json.RawMessage) (sdk.CallToolResult, error) {
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			sdk.Progress(p, 100, "")
		}
		return sdk.Text("Tool with progress executed successfully"), nil
	})
	sdk.AddTool("test_sampling", "Asks the client's model (sampling) and returns its answer.", func(a struct {
		Prompt string `json:"prompt" description:"the prompt to send to the model"`
	}) (sdk.CallToolResult, error) {
		res, err := sdk.CreateMessage(sdk.CreateMessageRequest{MaxTokens: 100,
			Messages: []sdk.SamplingMessage{{Role: "user", Content: sdk.Content{Type: "text", Text: a.Prompt}}}})
		if err != nil {
			return sdk.ErrorText(err.Error()), nil
		}
		return sdk.Text("LLM response: " + res.Content.Text), nil
	})
	sdk.AddTool("test_elicitation", "Asks the client's user for a username and an email.", func(a struct {
		Message string `json:"message" description:"the message to show the user"`
	}) (sdk.CallToolResult, error) {
		return elicit(a.Message, `{"type":"object","properties":{
		  "username":{"type":"string","description":"User's response"},
		  "email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`, "User response")
	})
	sdk.AddToolSchema("test_elicitation_sep1034_defaults", "Elicits a form whose fields have defaults.", noArgs, func(json.RawMessage) (sdk.CallToolResult, error) {
		return elicit("Please review your information", `{"type":"object","properties":{
		  "name":{"type":"string","default":"John Doe"},
		  "age":{"type":"integer","default":30},
		  "score":{"type":"number","default":95.5},
		  "status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
		  "verified":{"type":"boolean","default":true}}}`, "Elicitation completed")
	})
	sdk.AddToolSchema("test_elicitation_sep1330_enums", "Elicits a form with each kind of enum.", noArgs, func(json.RawMessage) (sdk.CallToolResult, error) {
		return elicit("Please choose", `{"type":"object","properties":{
		  "untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
		  "titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		  "legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
		  "untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
		  "titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`,
			"Elicitation completed")
	})
	sdk.AddToolSchema("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
	  "$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
	  "$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
	  "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`),
		func(args json.RawMessage) (sdk.CallToolResult, error) {
			return sdk.Text("received " + string(args)), nil
		})
}

// elicit asks the user and reports the answer as text.
func elicit(message, schema, label string) (sdk.CallToolResult, error) {
	res, err := sdk.Elicit(message, json.RawMessage(schema))
	if err != nil {
		return sdk.ErrorText(err.Error()), nil
	}
	content, _ := json.Marshal(res.Content)
	return sdk.Text(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, content)), nil
}
