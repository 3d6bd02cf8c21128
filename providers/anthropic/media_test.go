package anthropic_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers"
	"github.com/agenthost/agenthost/providers/providertest"
)

var (
	pdfBytes = []byte("%PDF-1.4 tiny")
	pngBytes = []byte("\x89PNG\r\n\x1a\n")
)

// A PDF goes as a base64 document block, a text file as a plain-text document, each
// titled with its name, an image as an image block; a tool's PDF goes in its
// tool_result: the exact shapes on the wire.
func TestPDFTextFileAndImageRequestShapes(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r, nil)
	r.Use("text.http")
	req := &providers.ChatRequest{Messages: []*providers.Message{
		{Role: providers.RoleUser, Content: []*providers.Part{
			{Type: providers.PartText, Text: "Summarise."},
			{Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf", Name: "report.pdf"},
			{Type: providers.PartFile, Data: []byte("a,b\n1,2\n"), MediaType: "text/csv", Name: "t.csv"},
			{Type: providers.PartImage, ImageData: pngBytes, MediaType: "image/png"},
		}},
		{Role: providers.RoleAssistant, ToolCalls: []*providers.ToolCall{{Id: "c1", Name: "fetch", Arguments: `{}`}}},
		{Role: providers.RoleTool, ToolCallId: "c1", Content: []*providers.Part{
			{Type: providers.PartText, Text: "fetched"}, {Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf"}}},
	}}
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatalf("stream ended with %v", err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Last().Body, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Messages {
		got = append(got, providertest.CanonicalCompact(t, m))
	}
	want := []string{
		`{"content":[{"text":"Summarise.","type":"text"},` +
			`{"source":{"data":"JVBERi0xLjQgdGlueQ==","media_type":"application/pdf","type":"base64"},"title":"report.pdf","type":"document"},` +
			`{"source":{"data":"a,b\n1,2\n","media_type":"text/plain","type":"text"},"title":"t.csv","type":"document"},` +
			`{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}],"role":"user"}`,
		`{"content":[{"id":"c1","input":{},"name":"fetch","type":"tool_use"}],"role":"assistant"}`,
		`{"content":[{"content":[{"text":"fetched","type":"text"},` +
			`{"source":{"data":"JVBERi0xLjQgdGlueQ==","media_type":"application/pdf","type":"base64"},"type":"document"}],` +
			`"is_error":false,"tool_use_id":"c1","type":"tool_result"}],"role":"user"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Audio, and a PDF for a model that takes none, are refused before any request, naming
// the model and the part.
func TestAPartClaudeCannotTakeIsRefusedBeforeTheCall(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r, nil)
	r.Use("text.http")
	for _, tc := range []struct {
		model string
		part  *providers.Part
		want  string
	}{
		{"claude-sonnet-4-5", &providers.Part{Type: providers.PartAudio, Data: []byte("RIFF"), MediaType: "audio/wav", Name: "note.wav"},
			`model "claude-sonnet-4-5" cannot take the audio part "note.wav" (audio/wav) of messages[0]: the Messages API takes no audio`},
		{"claude-3-haiku-20240307", &providers.Part{Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf"},
			`model "claude-3-haiku-20240307" cannot take the file part (application/pdf) of messages[0]`},
		{"claude-sonnet-4-5", &providers.Part{Type: providers.PartFile, Data: []byte("PK\x03\x04"), MediaType: "application/zip"},
			`cannot take the file part (application/zip) of messages[0]: the Messages API reads PDFs`},
	} {
		_, err := run(t, c, &providers.ChatRequest{Model: tc.model, Messages: []*providers.Message{
			{Role: providers.RoleUser, Content: []*providers.Part{tc.part}}}})
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindInvalidRequest || !strings.Contains(pe.Message, tc.want) {
			t.Errorf("%s: %v, want an invalid_request error containing %q", tc.model, err, tc.want)
		}
	}
	if n := r.Count(); n != 0 {
		t.Fatalf("the server received %d requests", n)
	}
}
