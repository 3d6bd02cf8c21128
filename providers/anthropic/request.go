package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agenthost/agenthost/providers"
)

// buildParams maps a protocol request onto the Messages API:
//
//   - system messages become the system prompt (the API keeps it apart);
//   - an assistant message sends back its thinking blocks first (from reasoning_state,
//     unchanged: the API checks their signatures), then its text, then its tool_use
//     blocks, whose input is the arguments as JSON ({} when they are not an object);
//   - tool messages become tool_result blocks; consecutive ones share one user message,
//     since the API wants every result of a turn in the message that follows it;
//   - images travel as base64 or as a URL;
//   - tool_choice auto | none | required | a tool's name; max_tokens from the request
//     or the adapter's default; with prompt caching on (the adapter's cache option, or
//     the request's prompt_cache), the system prompt and the last tool are marked as
//     cache breakpoints, and with the request's prompt_cache the older turns too: the
//     last block that can carry one in the message before the newest (markOlderTurns);
//   - the run's metadata key user_id becomes metadata.user_id.
func buildParams(req *providers.ChatRequest, cfg config) (sdk.MessageNewParams, error) {
	params := sdk.MessageNewParams{Model: sdk.Model(cfg.model), MaxTokens: cfg.maxTokens}
	if req.GetMaxTokens() > 0 {
		params.MaxTokens = req.GetMaxTokens()
	}
	if cfg.thinkingBudget > 0 {
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(cfg.thinkingBudget)
		if params.MaxTokens <= cfg.thinkingBudget {
			params.MaxTokens = cfg.thinkingBudget + cfg.maxTokens
		}
	}
	messages, system, err := buildMessages(req.GetMessages())
	if err != nil {
		return params, err
	}
	params.Messages = messages
	cache := cfg.cache || req.GetPromptCache().GetEnabled()
	if req.GetPromptCache().GetEnabled() {
		markOlderTurns(params.Messages)
	}
	if len(system) > 0 {
		sys := sdk.TextBlockParam{Text: strings.Join(system, "\n\n")}
		if cache {
			sys.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		params.System = []sdk.TextBlockParam{sys}
	}
	if params.Tools, err = buildTools(req.GetTools(), cache); err != nil {
		return params, err
	}
	// The Messages API's metadata has one field, user_id (an opaque id it may use to
	// detect abuse): the run's metadata key user_id goes there; other keys have no place
	// in the request and stay with the run.
	if id := req.GetMetadata().GetExtra()["user_id"]; id != "" {
		params.Metadata = sdk.MetadataParam{UserID: sdk.String(id)}
	}
	switch c := req.GetToolChoice(); c {
	case "", "auto":
	case "none":
		params.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case "required":
		params.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
	default:
		params.ToolChoice = sdk.ToolChoiceParamOfTool(c)
	}
	return params, nil
}

// buildMessages maps the conversation: the system messages' texts apart, tool results
// gathered into the user message that follows their turn, empty user messages left out.
func buildMessages(msgs []*providers.Message) (messages []sdk.MessageParam, system []string, err error) {
	var pendingResults []sdk.ContentBlockParamUnion
	flush := func() {
		if len(pendingResults) > 0 {
			messages = append(messages, sdk.NewUserMessage(pendingResults...))
			pendingResults = nil
		}
	}
	for i, m := range msgs {
		var blocks []sdk.ContentBlockParamUnion
		switch m.GetRole() {
		case providers.RoleSystem:
			if t := partsText(m.GetContent()); t != "" {
				system = append(system, t)
			}
			continue
		case providers.RoleTool:
			content, err := toolResult(m)
			if err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", i, err)
			}
			pendingResults = append(pendingResults, content)
			continue
		case providers.RoleUser:
			blocks, err = contentBlocks(m.GetContent())
		case providers.RoleAssistant:
			blocks, err = assistantBlocks(m)
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.GetRole())
		}
		flush()
		if err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			continue // the API refuses an empty message
		}
		if m.GetRole() == providers.RoleUser {
			messages = append(messages, sdk.NewUserMessage(blocks...))
		} else {
			messages = append(messages, sdk.NewAssistantMessage(blocks...))
		}
	}
	flush()
	return messages, system, nil
}

// buildTools maps the tools offered: the input schema's properties and required list
// go to their fields, the rest of the schema (but its type) alongside; with caching on,
// the last tool is a cache breakpoint.
func buildTools(tools []*providers.Tool, cache bool) ([]sdk.ToolUnionParam, error) {
	var out []sdk.ToolUnionParam
	for i, t := range tools {
		schema := sdk.ToolInputSchemaParam{}
		if s := t.GetInputSchema(); s != "" {
			var fields map[string]any
			if err := json.Unmarshal([]byte(s), &fields); err != nil {
				return nil, fmt.Errorf("tool %q: input schema is not a JSON object: %w", t.GetName(), err)
			}
			schema.Properties, schema.Required = fields["properties"], toStrings(fields["required"])
			delete(fields, "properties")
			delete(fields, "required")
			delete(fields, "type")
			schema.ExtraFields = fields
		}
		tool := sdk.ToolParam{Name: t.GetName(), InputSchema: schema}
		if d := t.GetDescription(); d != "" {
			tool.Description = sdk.String(d)
		}
		if cache && i == len(tools)-1 {
			tool.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &tool})
	}
	return out, nil
}

func assistantBlocks(m *providers.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	if s := m.GetReasoningState(); s != "" {
		var thinking []thinkingBlock
		if err := json.Unmarshal([]byte(s), &thinking); err != nil {
			return nil, fmt.Errorf("reasoning_state is not this adapter's: %w", err)
		}
		for _, t := range thinking {
			if t.Type == "redacted_thinking" {
				blocks = append(blocks, sdk.NewRedactedThinkingBlock(t.Data))
			} else {
				blocks = append(blocks, sdk.NewThinkingBlock(t.Signature, t.Thinking))
			}
		}
	}
	if t := partsText(m.GetContent()); t != "" {
		blocks = append(blocks, sdk.NewTextBlock(t))
	}
	for _, c := range m.GetToolCalls() {
		var input any = map[string]any{}
		var obj map[string]any
		if json.Unmarshal([]byte(c.GetArguments()), &obj) == nil && obj != nil {
			input = obj
		}
		blocks = append(blocks, sdk.NewToolUseBlock(c.GetId(), input, c.GetName()))
	}
	return blocks, nil
}

func toolResult(m *providers.Message) (sdk.ContentBlockParamUnion, error) {
	var content []sdk.ToolResultBlockParamContentUnion
	for _, p := range m.GetContent() {
		switch p.GetType() {
		case providers.PartImage:
			img, err := imageSource(p)
			if err != nil {
				return sdk.ContentBlockParamUnion{}, err
			}
			content = append(content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
		case providers.PartFile:
			content = append(content, sdk.ToolResultBlockParamContentUnion{OfDocument: document(p)})
		default:
			content = append(content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: p.GetText()}})
		}
	}
	isError := strings.HasPrefix(partsText(m.GetContent()), "Error:") // the loop's error results start so
	block := sdk.ToolResultBlockParam{ToolUseID: m.GetToolCallId(), Content: content, IsError: sdk.Bool(isError)}
	return sdk.ContentBlockParamUnion{OfToolResult: &block}, nil
}

func contentBlocks(parts []*providers.Part) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	for _, p := range parts {
		switch p.GetType() {
		case providers.PartImage:
			img, err := imageSource(p)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfImage: img})
		case providers.PartFile:
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfDocument: document(p)})
		default:
			if p.GetText() != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.GetText()))
			}
		}
	}
	return blocks, nil
}

func imageSource(p *providers.Part) (*sdk.ImageBlockParam, error) {
	var img sdk.ImageBlockParam
	switch {
	case len(p.GetImageData()) > 0:
		mt := p.GetMediaType()
		if mt == "" {
			return nil, fmt.Errorf("an image given as bytes needs its media type")
		}
		img.Source.OfBase64 = &sdk.Base64ImageSourceParam{MediaType: sdk.Base64ImageSourceMediaType(mt),
			Data: base64.StdEncoding.EncodeToString(p.GetImageData())}
	case p.GetImageUrl() != "":
		img.Source.OfURL = &sdk.URLImageSourceParam{URL: p.GetImageUrl()}
	default:
		return nil, fmt.Errorf("an image part without data or URL")
	}
	return &img, nil
}

func partsText(parts []*providers.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.GetType() == providers.PartText || p.GetType() == "" {
			b.WriteString(p.GetText())
		}
	}
	return b.String()
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// markOlderTurns places a cache breakpoint at the end of the older turns: on the last
// block that can carry one (a thinking block cannot) of the message before the newest.
// Each request writes the cache up to there, and the next one, two messages longer,
// reads it: the API looks back from a breakpoint for the longest prefix it holds. With
// the system prompt's and the tools' that makes three of the four breakpoints the API
// allows.
func markOlderTurns(msgs []sdk.MessageParam) {
	for i := len(msgs) - 2; i >= 0; i-- {
		blocks := msgs[i].Content
		for j := len(blocks) - 1; j >= 0; j-- {
			if cc := blocks[j].GetCacheControl(); cc != nil {
				*cc = sdk.NewCacheControlEphemeralParam()
				return
			}
		}
	}
}
