package providers

import (
	"fmt"
	"strings"
)

// Media is what a model takes besides text. Adapters say it per model family (their
// tables) or take it from the input_media option (ParseMedia), and refuse a request
// holding a part the model cannot take before calling the API (RefuseMedia).
type Media struct {
	Image, PDF, Audio bool
	// TextFiles: text files go as documents (else the adapter sends them as text parts,
	// which every model takes).
	TextFiles bool
}

// ParseMedia reads an input_media option: a comma list of image, pdf, audio (and
// text_files), or "none".
func ParseMedia(option string) (Media, error) {
	var m Media
	for _, f := range strings.Split(option, ",") {
		switch strings.TrimSpace(f) {
		case "image":
			m.Image = true
		case "pdf":
			m.PDF = true
		case "audio":
			m.Audio = true
		case "text_files":
			m.TextFiles = true
		case "none":
		default:
			return m, fmt.Errorf("input_media %q: want a list of image, pdf, audio, text_files, or none", option)
		}
	}
	return m, nil
}

// IsTextMedia reports a text file's media type: text/*, or JSON.
func IsTextMedia(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "application/json"
}

// RefuseMedia is the error naming the model and the first part of req it cannot take,
// or nil. takes decides a part the Media does not settle (an audio format, another
// file type); hint is what the API accepts for that part type, appended to the error.
func RefuseMedia(req *ChatRequest, model string, m Media, audioFormats []string, hint func(part string) string) error {
	for i, msg := range req.GetMessages() {
		for _, p := range msg.GetContent() {
			ok := true
			switch p.GetType() {
			case PartImage:
				ok = m.Image
			case PartAudio:
				ok = m.Audio && containsStr(audioFormats, p.GetMediaType())
			case PartFile:
				ok = IsTextMedia(p.GetMediaType()) || (m.PDF && p.GetMediaType() == "application/pdf")
			}
			if !ok {
				name := ""
				if p.GetName() != "" {
					name = fmt.Sprintf("%q ", p.GetName())
				}
				return fmt.Errorf("model %q cannot take the %s part %s(%s) of messages[%d]%s", model, p.GetType(), name, p.GetMediaType(), i, hint(p.GetType()))
			}
		}
	}
	return nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
