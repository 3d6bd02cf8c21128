package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var testPDF = []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")

func attachIn(session string, parts ...Part) RunInput {
	return RunInput{SessionID: session, Messages: []Message{{Role: RoleUser, Content: append([]Part{TextPart("look")}, parts...)}}}
}

// A media part's bytes are stored once per session under their hash; the stored message
// and its events hold the reference, the sniffed type and the size, never the bytes, and
// the model call gets the bytes back.
func TestAttachmentsAreStoredByHashAndTheModelGetsTheBytes(t *testing.T) {
	m := script(turn{text: "a pdf"}, turn{text: "same pdf"})
	a := newAgent(t, Config{Model: m})
	// The client says it is a PNG image; the bytes say PDF, and the bytes win.
	part := Part{Type: PartImage, MimeType: "image/png", Name: "../../etc/report.pdf", Data: testPDF}
	var evs []Event
	if res, err := a.RunWith(context.Background(), attachIn("s", part), func(e Event) { evs = append(evs, e) }); err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %v %v", res.Status, err)
	}
	sum := sha256.Sum256(testPDF)
	want := Part{Type: PartFile, Attachment: hex.EncodeToString(sum[:]), MimeType: "application/pdf", Name: "report.pdf", Size: int64(len(testPDF))}
	entries, _ := a.Store().Load(context.Background(), "s")
	var stored *Message
	for _, e := range entries {
		if e.Message != nil && e.Message.Role == RoleUser {
			stored = e.Message
		}
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), "%PDF") || strings.Contains(string(b), "JVBERi0") {
			t.Fatalf("entry %d holds the bytes: %s", e.Seq, b)
		}
	}
	if stored == nil || len(stored.Content) != 2 || !reflect.DeepEqual(stored.Content[1], want) {
		t.Fatalf("stored user message = %+v, want the reference %+v", stored, want)
	}
	for _, e := range evs {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), "JVBERi0") {
			t.Fatalf("event %s holds the bytes", e.Type)
		}
	}
	got := m.requests()[0].Messages[0].Content[1]
	if string(got.Data) != string(testPDF) || got.MimeType != "application/pdf" || got.Type != PartFile {
		t.Fatalf("model got %+v", got)
	}
	// A second run referencing the attachment by hash gets the same bytes; nothing more stored.
	in := attachIn("s", Part{Type: PartFile, Attachment: want.Attachment, Name: "again.pdf"})
	if res, err := a.Run(context.Background(), in); err != nil || res.Status != StatusCompleted {
		t.Fatalf("second run: %v %v", res.Status, err)
	}
	if got := m.requests()[1].Messages[2].Content[1]; string(got.Data) != string(testPDF) || got.Name != "again.pdf" {
		t.Fatalf("second call got %+v", got)
	}
}

// A part over the per-part limit, and one that takes the session past its limit, are
// refused before anything is stored or the model called, with the limit in the error.
func TestAttachmentLimitsPerPartAndPerSession(t *testing.T) {
	m := script(turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Attachments: AttachmentLimits{PartBytes: 100, SessionBytes: 150}})
	big := append(append([]byte(nil), testPDF...), make([]byte, 100)...)
	res, err := a.Run(context.Background(), attachIn("s", Part{Type: PartFile, Name: "big.pdf", Data: big}))
	if err == nil || !errors.Is(err, ErrAttachmentTooLarge) || !strings.Contains(err.Error(), "100-byte limit per part") || !strings.Contains(err.Error(), `file "big.pdf"`) {
		t.Fatalf("over the part limit: %v %v", res.Status, err)
	}
	if len(m.requests()) != 0 {
		t.Fatal("the model was called")
	}
	wav := wavClip(60)
	if _, err := a.Run(context.Background(), attachIn("s2", Part{Type: PartAudio, Data: wav})); err != nil {
		t.Fatal(err)
	}
	other := wavClip(61) // another hash: 90+ more bytes, past the session's 150
	_, err = a.Run(context.Background(), attachIn("s2", Part{Type: PartAudio, Data: other}))
	if !errors.Is(err, ErrAttachmentTooLarge) || !strings.Contains(err.Error(), "150-byte limit") {
		t.Fatalf("over the session limit: %v", err)
	}
}

// A reference is resolved in its own session only: another session's hash is refused.
func TestAttachmentReferenceFromAnotherSessionIsRefused(t *testing.T) {
	m := script(turn{text: "ok"}, turn{text: "no"})
	a := newAgent(t, Config{Model: m})
	if _, err := a.Run(context.Background(), attachIn("mine", Part{Type: PartFile, Data: testPDF})); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(testPDF)
	_, err := a.Run(context.Background(), attachIn("theirs", Part{Type: PartFile, Attachment: hex.EncodeToString(sum[:])}))
	if !errors.Is(err, ErrNoAttachment) {
		t.Fatalf("foreign reference: %v", err)
	}
}

// A tool's image result is stored like input; a guardrail's rewrite of its text keeps it.
func TestToolMediaResultIsStoredAndSurvivesARedaction(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	shot := FuncTool{ToolSpec: ToolSpec{Name: "shot"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return ToolResult{Content: []Part{TextPart("secret"), {Type: PartImage, Data: png}}}, nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "shot", `{}`)}}, turn{text: "seen"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, shot), Guardrails: []Guardrail{&redactor{}}})
	if res, err := a.Run(context.Background(), userIn("s", "go")); err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %v %v", res.Status, err)
	}
	msgs := m.requests()[1].Messages
	res := msgs[len(msgs)-1]
	if len(res.Content) != 2 || res.Content[0].Text != "[REDACTED]" || res.Content[1].MimeType != "image/png" || string(res.Content[1].Data) != string(png) {
		t.Fatalf("tool message to the model = %+v", res.Content)
	}
}

func wavClip(n int) []byte {
	b := append([]byte("RIFF\x00\x00\x00\x00WAVEfmt "), make([]byte, n)...)
	return b
}

func TestSniffMIMEUsesTheBytes(t *testing.T) {
	for _, c := range []struct {
		data []byte
		name string
		want string
	}{
		{testPDF, "x.txt", "application/pdf"},
		{wavClip(10), "", "audio/wav"},
		{[]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), "", "audio/mpeg"},
		{[]byte{0xFF, 0xFB, 0x90, 0x64, 0, 0}, "", "audio/mpeg"},
		{[]byte("a,b\n1,2\n"), "t.csv", "text/csv"},
		{[]byte("a,b\n1,2\n"), "t.exe", "text/plain"},
		{[]byte("\x89PNG\r\n\x1a\n"), "evil.pdf", "image/png"},
		{[]byte{0, 1, 2, 3}, "", "application/octet-stream"},
	} {
		if got := SniffMIME(c.data, c.name); got != c.want {
			t.Errorf("SniffMIME(%q, %q) = %q, want %q", c.data[:min(8, len(c.data))], c.name, got, c.want)
		}
	}
}
