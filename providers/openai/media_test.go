package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

var (
	pdfBytes = []byte("%PDF-1.4 tiny")
	wavBytes = []byte("RIFF\x00\x00\x00\x00WAVEfmt ")
	pngBytes = []byte("\x89PNG\r\n\x1a\n")
)

// sentMessages runs req through the adapter against the replay server and returns the
// request's messages, each as compact canonical JSON.
func sentMessages(t *testing.T, req *providers.ChatRequest) []string {
	t.Helper()
	r := newReplay(t)
	c := startAdapter(t, r)
	r.Use("text.http")
	if _, err := run(t, c, req); err != io.EOF {
		t.Fatalf("stream ended with %v", err)
	}
	var body struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Last().Body, &body); err != nil {
		t.Fatal(err)
	}
	out := []string{body.Model}
	for _, m := range body.Messages {
		out = append(out, canonicalCompact(t, m))
	}
	return out
}

// A PDF goes as a file part (file_data, a data: URL, with its name), an image as an
// image_url part, a text file as a text part naming it: the exact shapes on the wire.
func TestPDFImageAndTextFileRequestShapes(t *testing.T) {
	got := sentMessages(t, &providers.ChatRequest{Messages: []*providers.Message{
		{Role: providers.RoleUser, Content: []*providers.Part{
			{Type: providers.PartText, Text: "Summarise."},
			{Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf", Name: "report.pdf"},
			{Type: providers.PartImage, ImageData: pngBytes, MediaType: "image/png"},
			{Type: providers.PartFile, Data: []byte("a,b\n1,2\n"), MediaType: "text/csv", Name: "t.csv"},
		}},
	}})
	want := []string{"gpt-4o-mini",
		`{"content":[{"text":"Summarise.","type":"text"},` +
			`{"file":{"file_data":"data:application/pdf;base64,JVBERi0xLjQgdGlueQ==","filename":"report.pdf"},"type":"file"},` +
			`{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"},` +
			`{"text":"File \"t.csv\" (text/csv):\na,b\n1,2\n","type":"text"}],"role":"user"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An audio clip goes to an audio model as an input_audio part: base64 and its format.
func TestAudioClipRequestShape(t *testing.T) {
	got := sentMessages(t, &providers.ChatRequest{Model: "gpt-4o-audio-preview", Messages: []*providers.Message{
		{Role: providers.RoleUser, Content: []*providers.Part{
			{Type: providers.PartText, Text: "Transcribe."},
			{Type: providers.PartAudio, Data: wavBytes, MediaType: "audio/wav"},
			{Type: providers.PartAudio, Data: []byte("ID3\x04"), MediaType: "audio/mpeg"},
		}},
	}})
	want := []string{"gpt-4o-audio-preview",
		`{"content":[{"text":"Transcribe.","type":"text"},` +
			`{"input_audio":{"data":"UklGRgAAAABXQVZFZm10IA==","format":"wav"},"type":"input_audio"},` +
			`{"input_audio":{"data":"SUQzBA==","format":"mp3"},"type":"input_audio"}],"role":"user"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A part the model cannot take is refused before any request, naming the model and the
// part; the input_media option says what a compatible server's model takes.
func TestAPartTheModelCannotTakeIsRefusedBeforeTheCall(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r)
	r.Use("text.http")
	for _, tc := range []struct {
		model string
		part  *providers.Part
		want  string
	}{
		{"gpt-4o-mini", &providers.Part{Type: providers.PartAudio, Data: wavBytes, MediaType: "audio/wav"},
			`model "gpt-4o-mini" cannot take the audio part (audio/wav) of messages[0]`},
		{"gpt-3.5-turbo", &providers.Part{Type: providers.PartImage, ImageData: pngBytes, MediaType: "image/png"},
			`model "gpt-3.5-turbo" cannot take the image part (image/png) of messages[0]`},
		{"gpt-4o-audio-preview", &providers.Part{Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf", Name: "r.pdf"},
			`model "gpt-4o-audio-preview" cannot take the file part "r.pdf" (application/pdf) of messages[0]`},
		{"gpt-4o", &providers.Part{Type: providers.PartFile, Data: []byte("PK\x03\x04"), MediaType: "application/zip", Name: "x.zip"},
			`model "gpt-4o" cannot take the file part "x.zip" (application/zip) of messages[0]: Chat Completions reads PDFs`},
		{"my-local-llama", &providers.Part{Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf"},
			`model "my-local-llama" cannot take the file part (application/pdf)`},
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
	// A compatible server's model declared to take PDFs gets one.
	c2 := startAdapterWith(t, r, map[string]string{"input_media": "image,pdf"})
	if _, err := run(t, c2, &providers.ChatRequest{Model: "my-local-llama", Messages: []*providers.Message{
		{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartFile, Data: pdfBytes, MediaType: "application/pdf"}}}}}); err != io.EOF {
		t.Fatalf("declared pdf: %v", err)
	}
	if !strings.Contains(string(r.Last().Body), `"file_data":"data:application/pdf;base64,`) {
		t.Fatalf("sent %s", r.Last().Body)
	}
}
