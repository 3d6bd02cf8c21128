package openai

import (
	"encoding/base64"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/agenthost/agenthost/providers"
)

// What a Chat Completions model takes besides text: images (image_url parts), PDFs (file
// parts with file_data) and audio (input_audio parts, wav or mp3). Text files (text/*,
// JSON) go to every model as text parts. A part the model cannot take is refused before
// the request is sent (providers.RefuseMedia), naming the model and the part.

// mediaFor is what model takes: the input_media option when it is set (for
// OpenAI-compatible servers, whose models we cannot know), else what OpenAI's own model
// families take, and images only for a model name we do not know (what this adapter
// always sent).
func mediaFor(model, option string) (providers.Media, error) {
	if option != "" {
		return providers.ParseMedia(option)
	}
	name := strings.ToLower(model)
	switch {
	case strings.Contains(name, "audio"): // gpt-4o-audio-preview, gpt-audio: audio in, no images
		return providers.Media{Audio: true}, nil
	case strings.HasPrefix(name, "gpt-3.5"), name == "gpt-4", strings.HasPrefix(name, "gpt-4-0"), strings.HasPrefix(name, "gpt-4-32k"),
		strings.HasPrefix(name, "o1-mini"), strings.HasPrefix(name, "o3-mini"):
		return providers.Media{}, nil // text only
	case strings.HasPrefix(name, "gpt-4o"), strings.HasPrefix(name, "gpt-4.1"), strings.HasPrefix(name, "gpt-4.5"),
		strings.HasPrefix(name, "gpt-5"), strings.HasPrefix(name, "gpt-4-turbo"), strings.HasPrefix(name, "chatgpt-4o"),
		name == "o1" || strings.HasPrefix(name, "o1-2"), strings.HasPrefix(name, "o3"), strings.HasPrefix(name, "o4"):
		return providers.Media{Image: true, PDF: true}, nil
	}
	return providers.Media{Image: true}, nil
}

// refuseMedia is the error for the first part of req that model cannot take, or nil.
func refuseMedia(req *providers.ChatRequest, model string, m providers.Media) error {
	return providers.RefuseMedia(req, model, m, []string{"audio/wav", "audio/mpeg"}, func(part string) string {
		switch part {
		case providers.PartFile:
			return ": Chat Completions reads PDFs (on models that take them) and text files"
		case providers.PartAudio:
			return ": Chat Completions takes wav or mp3 on audio models (gpt-4o-audio-preview, gpt-audio)"
		}
		return ""
	})
}

func nameOf(p *providers.Part) string {
	if p.GetName() == "" {
		return ""
	}
	return fmt.Sprintf("%q ", p.GetName())
}

func audioFormat(mime string) string {
	if mime == "audio/mpeg" {
		return "mp3"
	}
	return "wav"
}

// mediaPart is a media part as a Chat Completions content part (refuseMedia has passed it).
func mediaPart(p *providers.Part) sdk.ChatCompletionContentPartUnionParam {
	switch {
	case p.GetType() == providers.PartImage:
		return imagePart(p)
	case p.GetType() == providers.PartAudio:
		return sdk.InputAudioContentPart(sdk.ChatCompletionContentPartInputAudioInputAudioParam{
			Data: base64.StdEncoding.EncodeToString(p.GetData()), Format: audioFormat(p.GetMediaType())})
	case providers.IsTextMedia(p.GetMediaType()):
		return sdk.TextContentPart(fmt.Sprintf("File %s(%s):\n%s", nameOf(p), p.GetMediaType(), p.GetData()))
	}
	f := sdk.ChatCompletionContentPartFileFileParam{
		FileData: sdk.String("data:" + p.GetMediaType() + ";base64," + base64.StdEncoding.EncodeToString(p.GetData()))}
	f.Filename = sdk.String(cmpOr(p.GetName(), "attachment.pdf"))
	return sdk.FileContentPart(f)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
