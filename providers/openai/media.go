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
// the request is sent (refuseMedia), naming the model and the part.
type media struct{ image, pdf, audio bool }

// mediaFor is what model takes: the input_media option when it is set (a comma list of
// image, pdf, audio, or "none": for OpenAI-compatible servers, whose models we cannot
// know), else what OpenAI's own model families take, and images only for a model name
// we do not know (what this adapter always sent).
func mediaFor(model, option string) (media, error) {
	if option != "" {
		var m media
		for _, f := range strings.Split(option, ",") {
			switch strings.TrimSpace(f) {
			case "image":
				m.image = true
			case "pdf":
				m.pdf = true
			case "audio":
				m.audio = true
			case "none":
			default:
				return m, fmt.Errorf("input_media %q: want a list of image, pdf, audio, or none", option)
			}
		}
		return m, nil
	}
	name := strings.ToLower(model)
	switch {
	case strings.Contains(name, "audio"): // gpt-4o-audio-preview, gpt-audio: audio in, no images
		return media{audio: true}, nil
	case strings.HasPrefix(name, "gpt-3.5"), name == "gpt-4", strings.HasPrefix(name, "gpt-4-0"), strings.HasPrefix(name, "gpt-4-32k"),
		strings.HasPrefix(name, "o1-mini"), strings.HasPrefix(name, "o3-mini"):
		return media{}, nil // text only
	case strings.HasPrefix(name, "gpt-4o"), strings.HasPrefix(name, "gpt-4.1"), strings.HasPrefix(name, "gpt-4.5"),
		strings.HasPrefix(name, "gpt-5"), strings.HasPrefix(name, "gpt-4-turbo"), strings.HasPrefix(name, "chatgpt-4o"),
		name == "o1" || strings.HasPrefix(name, "o1-2"), strings.HasPrefix(name, "o3"), strings.HasPrefix(name, "o4"):
		return media{image: true, pdf: true}, nil
	}
	return media{image: true}, nil
}

// refuseMedia is the error for the first part of req that model cannot take, or nil.
func refuseMedia(req *providers.ChatRequest, model string, m media) error {
	for i, msg := range req.GetMessages() {
		for _, p := range msg.GetContent() {
			ok := true
			switch p.GetType() {
			case providers.PartImage:
				ok = m.image
			case providers.PartAudio:
				ok = m.audio && audioFormat(p.GetMediaType()) != ""
			case providers.PartFile:
				ok = isText(p.GetMediaType()) || (m.pdf && p.GetMediaType() == "application/pdf")
			}
			if !ok {
				return fmt.Errorf("model %q cannot take the %s part %s(%s) of messages[%d]%s", model, p.GetType(), nameOf(p), p.GetMediaType(), i, hint(p))
			}
		}
	}
	return nil
}

func nameOf(p *providers.Part) string {
	if p.GetName() == "" {
		return ""
	}
	return fmt.Sprintf("%q ", p.GetName())
}

func hint(p *providers.Part) string {
	switch p.GetType() {
	case providers.PartFile:
		return ": Chat Completions reads PDFs (on models that take them) and text files"
	case providers.PartAudio:
		return ": Chat Completions takes wav or mp3 on audio models (gpt-4o-audio-preview, gpt-audio)"
	}
	return ""
}

func isText(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "application/json"
}

func audioFormat(mime string) string {
	switch mime {
	case "audio/wav":
		return "wav"
	case "audio/mpeg":
		return "mp3"
	}
	return ""
}

// mediaPart is a media part as a Chat Completions content part (refuseMedia has passed it).
func mediaPart(p *providers.Part) sdk.ChatCompletionContentPartUnionParam {
	switch {
	case p.GetType() == providers.PartImage:
		return imagePart(p)
	case p.GetType() == providers.PartAudio:
		return sdk.InputAudioContentPart(sdk.ChatCompletionContentPartInputAudioInputAudioParam{
			Data: base64.StdEncoding.EncodeToString(p.GetData()), Format: audioFormat(p.GetMediaType())})
	case isText(p.GetMediaType()):
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
