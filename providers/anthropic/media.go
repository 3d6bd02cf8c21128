package anthropic

import (
	"encoding/base64"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agenthost/agenthost/providers"
)

// What a Claude model takes besides text: images (image blocks) and PDFs (document
// blocks, base64); text files (text/*, JSON) go as plain-text document blocks. The
// Messages API takes no audio. A part the model cannot take is refused before the
// request is sent (providers.RefuseMedia), naming the model and the part.

// mediaFor is what model takes: the input_media option when set (a compatible server's
// model), else Claude's families: no media before Claude 3, no PDFs on the Claude 3.0
// models, images and PDFs since Claude 3.5; a name we do not know, images and PDFs.
func mediaFor(model, option string) (providers.Media, error) {
	if option != "" {
		return providers.ParseMedia(option)
	}
	name := strings.ToLower(model)
	switch {
	case strings.HasPrefix(name, "claude-2"), strings.HasPrefix(name, "claude-instant"):
		return providers.Media{}, nil
	case strings.HasPrefix(name, "claude-3-opus"), strings.HasPrefix(name, "claude-3-sonnet"), strings.HasPrefix(name, "claude-3-haiku"):
		return providers.Media{Image: true}, nil
	}
	return providers.Media{Image: true, PDF: true}, nil
}

func refuseMedia(req *providers.ChatRequest, model string, m providers.Media) error {
	return providers.RefuseMedia(req, model, m, nil, func(part string) string {
		switch part {
		case providers.PartAudio:
			return ": the Messages API takes no audio"
		case providers.PartFile:
			return ": the Messages API reads PDFs (on models that take them) and text files"
		}
		return ""
	})
}

// document is a file part as a document block: a PDF as base64, a text file as plain
// text, titled with the file's name.
func document(p *providers.Part) *sdk.DocumentBlockParam {
	var d sdk.DocumentBlockParam
	if providers.IsTextMedia(p.GetMediaType()) {
		d.Source.OfText = &sdk.PlainTextSourceParam{Data: string(p.GetData())}
	} else {
		d.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(p.GetData())}
	}
	if p.GetName() != "" {
		d.Title = sdk.String(p.GetName())
	}
	return &d
}
