package server

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// inputPart is one part of an AG-UI message's content: text; binary (mimeType and one
// of data, url or id, with an optional filename); or image, audio, document or file
// with a source (data or url). The bytes of data go to the loop, which sniffs their type
// (the mimeType given is not trusted), bounds them and stores them with the session; an
// id names an attachment the session already holds (its sha256); a url is taken for an
// image only (the provider fetches it; the host fetches nothing).
type inputPart struct {
	Type     string       `json:"type"`
	Text     string       `json:"text"`
	MimeType string       `json:"mimeType"`
	Data     string       `json:"data"`
	URL      string       `json:"url"`
	ID       string       `json:"id"`
	Filename string       `json:"filename"`
	Source   *inputSource `json:"source"`
}

type inputSource struct {
	Type     string `json:"type"`
	Value    string `json:"value"`
	MimeType string `json:"mimeType"`
}

var mediaTypes = map[string]loop.PartType{"binary": loop.PartFile, "image": loop.PartImage, "audio": loop.PartAudio,
	"document": loop.PartFile, "file": loop.PartFile}

func (p inputPart) toLoop() (loop.Part, error) {
	if p.Type == "text" {
		return loop.TextPart(validUTF8(p.Text)), nil
	}
	kind, ok := mediaTypes[p.Type]
	if !ok {
		return loop.Part{}, fmt.Errorf("part type %q is not supported (text, binary, image, audio, document, file)", p.Type)
	}
	data, url, mime := p.Data, p.URL, p.MimeType
	if p.Source != nil {
		switch p.Source.Type {
		case "data":
			data = p.Source.Value
		case "url":
			url = p.Source.Value
		default:
			return loop.Part{}, fmt.Errorf("source type %q: want data or url", p.Source.Type)
		}
		mime = p.Source.MimeType
	}
	name := validUTF8(p.Filename)
	switch {
	case data != "":
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return loop.Part{}, fmt.Errorf("%s data: not base64: %w", p.Type, err)
		}
		return loop.Part{Type: kind, Data: b, Name: name}, nil
	case p.ID != "":
		return loop.Part{Type: kind, Attachment: validUTF8(p.ID), Name: name}, nil
	case url != "" && (kind == loop.PartImage || (p.Type == "binary" && len(mime) > 6 && mime[:6] == "image/")):
		return loop.Part{Type: loop.PartImage, URL: validUTF8(url), MimeType: validUTF8(mime)}, nil
	case url != "":
		return loop.Part{}, errors.New("only an image may be given by URL (the host fetches nothing): send the bytes as data")
	}
	return loop.Part{}, fmt.Errorf("a %s part needs data, an id or (for an image) a url", p.Type)
}
