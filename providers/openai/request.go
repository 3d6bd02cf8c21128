package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agenthost/agenthost/providers"
)

// buildParams translates the protocol request into Chat Completions params.
// Reasoning on earlier assistant messages is sent back only when sendReasoning names
// the field the server reads it from (the send_reasoning option: reasoning_content for
// vLLM and DeepSeek-style servers, reasoning for Ollama): most servers reject or
// ignore it, and OpenAI's own has no such field.
func buildParams(req *providers.ChatRequest, model, maxTokensField, sendReasoning string) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	var images []sdk.ChatCompletionContentPartUnionParam // from the tool messages just sent
	for i, m := range req.GetMessages() {
		if m.GetRole() != providers.RoleTool && len(images) > 0 {
			p.Messages = append(p.Messages, sdk.UserMessage(images))
			images = nil
		}
		msg, err := message(m, sendReasoning)
		if err != nil {
			return p, fmt.Errorf("messages[%d]: %w", i, err)
		}
		p.Messages = append(p.Messages, msg)
		if m.GetRole() == providers.RoleTool {
			images = append(images, toolImages(m)...)
		}
	}
	if len(images) > 0 {
		p.Messages = append(p.Messages, sdk.UserMessage(images))
	}
	for _, t := range req.GetTools() {
		fn := shared.FunctionDefinitionParam{Name: t.GetName()}
		if t.GetDescription() != "" {
			fn.Description = sdk.String(t.GetDescription())
		}
		if t.GetInputSchema() != "" {
			var schema shared.FunctionParameters
			if err := json.Unmarshal([]byte(t.GetInputSchema()), &schema); err != nil {
				return p, fmt.Errorf("tool %q: input_schema: %w", t.GetName(), err)
			}
			fn.Parameters = schema
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	switch c := req.GetToolChoice(); c {
	case "":
	case "auto", "none", "required":
		p.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String(c)}
	default:
		p.ToolChoice = sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: c})
	}
	if rf := req.GetResponseFormat(); rf != "" {
		var schema map[string]any
		if err := json.Unmarshal([]byte(rf), &schema); err != nil {
			return p, fmt.Errorf("response_format: %w", err)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "output", Schema: schema},
			},
		}
	}
	if n := req.GetMaxTokens(); n > 0 {
		if maxTokensField == "max_completion_tokens" {
			p.MaxCompletionTokens = sdk.Int(n)
		} else {
			p.MaxTokens = sdk.Int(n)
		}
	}
	return p, nil
}

func message(m *providers.Message, sendReasoning string) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.GetRole() {
	case providers.RoleSystem:
		return sdk.SystemMessage(providers.TextOf(m)), nil
	case providers.RoleUser:
		if onlyText(m) {
			return sdk.UserMessage(providers.TextOf(m)), nil
		}
		var parts []sdk.ChatCompletionContentPartUnionParam
		for _, part := range m.GetContent() {
			switch part.GetType() {
			case providers.PartText, "":
				parts = append(parts, sdk.TextContentPart(part.GetText()))
			case providers.PartImage, providers.PartAudio, providers.PartFile:
				parts = append(parts, mediaPart(part))
			default:
				return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown part type %q", part.GetType())
			}
		}
		return sdk.UserMessage(parts), nil
	case providers.RoleAssistant:
		a := sdk.ChatCompletionAssistantMessageParam{}
		if text := providers.TextOf(m); text != "" {
			a.Content.OfString = sdk.String(text)
		}
		if m.GetName() != "" {
			a.Name = sdk.String(m.GetName())
		}
		if sendReasoning != "" && m.GetReasoning() != "" {
			a.SetExtraFields(map[string]any{sendReasoning: m.GetReasoning()})
		}
		for _, tc := range m.GetToolCalls() {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.GetId(),
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.GetName(), Arguments: tc.GetArguments()},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case providers.RoleTool:
		return sdk.ToolMessage(providers.TextOf(m), m.GetToolCallId()), nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.GetRole())
}

func imagePart(part *providers.Part) sdk.ChatCompletionContentPartUnionParam {
	url := part.GetImageUrl()
	if url == "" {
		url = "data:" + part.GetMediaType() + ";base64," + base64.StdEncoding.EncodeToString(part.GetImageData())
	}
	return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url})
}

// toolImages returns the media (images, audio, files) of a tool message as user-message
// parts, introduced by a line naming the call. Chat Completions accepts only text in a tool message, and
// a user message may not come between the tool messages answering one assistant turn,
// so buildParams sends them in one user message after the last of those tool messages.
func toolImages(m *providers.Message) []sdk.ChatCompletionContentPartUnionParam {
	var parts []sdk.ChatCompletionContentPartUnionParam
	for _, part := range m.GetContent() {
		switch part.GetType() {
		case providers.PartImage, providers.PartAudio, providers.PartFile:
			if len(parts) == 0 {
				parts = append(parts, sdk.TextContentPart(fmt.Sprintf("%s returned by tool call %s:", mediaWord(m), m.GetToolCallId())))
			}
			parts = append(parts, mediaPart(part))
		}
	}
	return parts
}

// mediaWord is "Image" when a tool message's media are images only (what it always said), else "Media".
func mediaWord(m *providers.Message) string {
	for _, p := range m.GetContent() {
		if p.GetType() == providers.PartAudio || p.GetType() == providers.PartFile {
			return "Media"
		}
	}
	return "Image"
}

func onlyText(m *providers.Message) bool {
	for _, p := range m.GetContent() {
		if p.GetType() != providers.PartText && p.GetType() != "" {
			return false
		}
	}
	return true
}
