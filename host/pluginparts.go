package host

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/sandbox"
)

// pluginPart is a plugin's content block as a loop part: images, audio and embedded
// resources keep their bytes (the loop sniffs, bounds and stores them), with the type
// and the resource's URI the plugin declared for a direct call (mcp serve) to return.
func pluginPart(c sandbox.Content) loop.Part {
	switch c.Type {
	case "image", "audio":
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			return loop.TextPart("(" + c.Type + " data that is not base64)")
		}
		return loop.Part{Type: loop.PartType(c.Type), Data: data, MimeType: c.MimeType}
	case "resource":
		var r struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     []byte `json:"blob"`
		}
		if err := json.Unmarshal(c.Resource, &r); err != nil {
			return loop.TextPart("(an embedded resource that is not JSON)")
		}
		data := r.Blob
		if data == nil {
			data = []byte(r.Text)
		}
		return loop.Part{Type: loop.PartFile, Data: data, MimeType: r.MimeType, URL: r.URI, Name: path.Base(r.URI)}
	}
	return loop.TextPart(c.Text)
}

// inputMedia says what media a run's input carries, for its audit record: each part's
// sniffed type and size ("application/pdf 5120 B, image/png 99 B"), or its attachment
// reference; never its bytes or its name.
func inputMedia(msgs []loop.Message) string {
	var out []string
	for _, m := range msgs {
		for _, p := range m.Content {
			switch {
			case !p.IsMedia():
			case p.Data != nil:
				out = append(out, fmt.Sprintf("%s %d B", loop.SniffMIME(p.Data, p.Name), len(p.Data)))
			case p.Attachment != "":
				out = append(out, "attachment "+p.Attachment)
			case p.URL != "" && !strings.HasPrefix(p.URL, "data:"):
				out = append(out, "image by URL")
			}
		}
	}
	return strings.Join(out, ", ")
}
