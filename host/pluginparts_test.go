package host

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/plugins/sdk"
	"github.com/agenthost/agenthost/sandbox"
)

// What the SDK's Image, Audio and File helpers return becomes media parts with their
// bytes (the loop sniffs and stores them), through the JSON a plugin's result travels in.
func TestSDKMediaResultsBecomeMediaParts(t *testing.T) {
	pdf := []byte("%PDF-1.4 x")
	for _, c := range []struct {
		res  sdk.CallToolResult
		want loop.Part
	}{
		{sdk.Image([]byte("\x89PNG"), "image/png"), loop.Part{Type: loop.PartImage, Data: []byte("\x89PNG"), MimeType: "image/png"}},
		{sdk.Audio([]byte("RIFF"), "audio/wav"), loop.Part{Type: loop.PartAudio, Data: []byte("RIFF"), MimeType: "audio/wav"}},
		{sdk.File("report://q3/summary.pdf", "application/pdf", pdf), loop.Part{Type: loop.PartFile, Data: pdf, MimeType: "application/pdf",
			URL: "report://q3/summary.pdf", Name: "summary.pdf"}},
	} {
		b, _ := json.Marshal(c.res)
		var got sandbox.CallResult
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		p := pluginPart(got.Content[0])
		if p.Type != c.want.Type || string(p.Data) != string(c.want.Data) || p.MimeType != c.want.MimeType || p.URL != c.want.URL || p.Name != c.want.Name {
			t.Errorf("%s: got %+v, want %+v", c.want.Type, p, c.want)
		}
	}
	if p := pluginPart(sandbox.Content{Type: "image", Data: "not base64!"}); p.Type != loop.PartText || p.Text != "(image data that is not base64)" {
		t.Errorf("bad base64: %+v", p)
	}
}

// A run's audit record names its input media by sniffed type and size, or reference,
// never by bytes or name.
func TestAuditNamesInputMediaByTypeAndSize(t *testing.T) {
	msgs := []loop.Message{{Role: loop.RoleUser, Content: []loop.Part{loop.TextPart("x"),
		{Type: loop.PartImage, Data: []byte("%PDF-1.4 secret words"), Name: "payroll.pdf"},
		{Type: loop.PartFile, Attachment: "ab12"}, {Type: loop.PartImage, URL: "https://x/y.png"}}}}
	if got, want := inputMedia(msgs), "application/pdf 21 B, attachment ab12, image by URL"; got != want {
		t.Fatalf("inputMedia = %q, want %q", got, want)
	}
}
