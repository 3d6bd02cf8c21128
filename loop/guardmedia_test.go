package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// mediaGuard records what it was shown of media, and blocks audio parts and parts over
// 1 KiB, as a guardrail plugin may.
type mediaGuard struct{ seen []GuardInput }

func (*mediaGuard) Name() string { return "media" }
func (g *mediaGuard) Check(_ context.Context, in GuardInput) (GuardResult, error) {
	g.seen = append(g.seen, in)
	for _, m := range in.Media {
		if m.Type == PartAudio || m.Size > 1024 {
			return GuardResult{Action: GuardBlock, Reason: string(m.Type) + " " + m.Name}, nil
		}
	}
	return GuardResult{Action: GuardAllow}, nil
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// Guardrails see each media part of an input (and of a sampled message) as its sniffed
// type, size and name, never the bytes; a blocked input fails the run and stores none of
// its parts. A reference is described from the store; one the session does not hold is
// refused.
func TestGuardrailsSeeInputMediaAndABlockedPartIsNeverStored(t *testing.T) {
	g := &mediaGuard{}
	a := newAgent(t, Config{Model: script(turn{text: "ok"}, turn{text: "ok"}), Guardrails: []Guardrail{g}})
	// The client calls the PDF an image and the wav a file: the guardrail sees what the bytes are.
	_, err := a.Run(context.Background(), attachIn("s", Part{Type: PartImage, MimeType: "image/png", Name: "r.pdf", Data: testPDF},
		Part{Type: PartFile, Name: "../v.wav", Data: wavClip(40)}))
	if err == nil || !strings.Contains(err.Error(), `blocked by guardrail "media" at input: audio v.wav`) {
		t.Fatalf("run with audio: %v", err)
	}
	want := []MediaInfo{{Type: PartFile, MimeType: "application/pdf", Size: int64(len(testPDF)), Name: "r.pdf"},
		{Type: PartAudio, MimeType: "audio/wav", Size: int64(len(wavClip(40))), Name: "v.wav"}}
	if len(g.seen) != 1 || g.seen[0].Stage != StageInput || g.seen[0].Content != "look" || !reflect.DeepEqual(g.seen[0].Media, want) {
		t.Fatalf("guardrail saw %+v, want media %+v", g.seen, want)
	}
	for _, b := range [][]byte{testPDF, wavClip(40)} {
		if _, err := a.Store().(AttachmentStore).Attachment(context.Background(), "s", hexSum(b)); !errors.Is(err, ErrNoAttachment) {
			t.Errorf("a blocked input's part %.12s was stored: %v", hexSum(b), err)
		}
	}

	// Allowed, then named by reference: the guardrail sees the stored type and size.
	if _, err := a.Run(context.Background(), attachIn("s", Part{Type: PartFile, Data: testPDF})); err != nil {
		t.Fatal(err)
	}
	g.seen = nil
	if _, err := a.Run(context.Background(), attachIn("s", Part{Type: PartImage, Attachment: hexSum(testPDF), Name: "again.pdf"})); err != nil {
		t.Fatal(err)
	}
	if want := []MediaInfo{{Type: PartFile, MimeType: "application/pdf", Size: int64(len(testPDF)), Name: "again.pdf"}}; len(g.seen) == 0 || !reflect.DeepEqual(g.seen[0].Media, want) {
		t.Fatalf("by reference, the guardrail saw %+v, want %+v", g.seen, want)
	}
	if _, err := a.Run(context.Background(), attachIn("other", Part{Type: PartFile, Attachment: hexSum(testPDF)})); !errors.Is(err, ErrNoAttachment) {
		t.Fatalf("another session's reference: %v", err)
	}
}

// A tool result's media are shown to the guardrail before they are stored: an allowed
// image is stored and described; a blocked one (over 1 KiB) becomes an error result and
// is never stored. Text-only stages carry no media.
func TestGuardrailsSeeToolResultMediaBeforeItIsStored(t *testing.T) {
	small := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	big := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2048)...)
	shot := FuncTool{ToolSpec: ToolSpec{Name: "shot"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		img := small
		if strings.Contains(c.Arguments, "big") {
			img = big
		}
		return ToolResult{Content: []Part{TextPart("a shot"), {Type: PartImage, Data: img, Name: "shot.png"}}}, nil
	}}
	g := &mediaGuard{}
	m := script(turn{calls: []ToolCall{call("c1", "shot", `{}`), call("c2", "shot", `{"size":"big"}`)}}, turn{text: "seen"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, shot), Guardrails: []Guardrail{g}})
	if res, err := a.Run(context.Background(), userIn("s", "go")); err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %v %v", res.Status, err)
	}
	byStage := map[Stage][][]MediaInfo{}
	for _, in := range g.seen {
		byStage[in.Stage] = append(byStage[in.Stage], in.Media)
	}
	wantResults := [][]MediaInfo{{{Type: PartImage, MimeType: "image/png", Size: int64(len(small)), Name: "shot.png"}},
		{{Type: PartImage, MimeType: "image/png", Size: int64(len(big)), Name: "shot.png"}}}
	if !reflect.DeepEqual(byStage[StageToolResult], wantResults) {
		t.Fatalf("tool_result media = %+v, want %+v", byStage[StageToolResult], wantResults)
	}
	for _, st := range []Stage{StageInput, StageToolArgs, StageOutput} {
		for _, media := range byStage[st] {
			if media != nil {
				t.Errorf("%s carried media %+v", st, media)
			}
		}
	}
	msgs := m.requests()[1].Messages
	c1, c2 := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if len(c1.Content) != 2 || c1.Content[1].Attachment != hexSum(small) || string(c1.Content[1].Data) != string(small) {
		t.Errorf("the allowed result to the model = %+v", c1.Content)
	}
	if c2.Text() != `Error: blocked by guardrail "media" at tool_result: image shot.png` || len(c2.Content) != 1 {
		t.Errorf("the blocked result to the model = %+v", c2.Content)
	}
	store := a.Store().(AttachmentStore)
	if _, err := store.Attachment(context.Background(), "s", hexSum(small)); err != nil {
		t.Errorf("the allowed image: %v", err)
	}
	if _, err := store.Attachment(context.Background(), "s", hexSum(big)); !errors.Is(err, ErrNoAttachment) {
		t.Errorf("the blocked image was stored: %v", err)
	}
}

// A tool's part that cannot be read (a broken data: URL) is left out of what the
// guardrail sees and becomes a "not kept" text part, as without guardrails; the rest of
// the result is kept.
func TestAToolsUnreadablePartIsNotKeptAndTheGuardrailSeesTheRest(t *testing.T) {
	small := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	shot := FuncTool{ToolSpec: ToolSpec{Name: "shot"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return ToolResult{Content: []Part{TextPart("two"), {Type: PartImage, URL: "data:image/png,notbase64"}, {Type: PartImage, Data: small}}}, nil
	}}
	g := &mediaGuard{}
	m := script(turn{calls: []ToolCall{call("c1", "shot", `{}`)}}, turn{text: "seen"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, shot), Guardrails: []Guardrail{g}})
	if res, err := a.Run(context.Background(), userIn("s", "go")); err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %v %v", res.Status, err)
	}
	for _, in := range g.seen {
		if in.Stage == StageToolResult && !reflect.DeepEqual(in.Media, []MediaInfo{{Type: PartImage, MimeType: "image/png", Size: int64(len(small))}}) {
			t.Errorf("tool_result media = %+v", in.Media)
		}
	}
	msgs := m.requests()[1].Messages
	got := msgs[len(msgs)-1].Content
	if len(got) != 3 || got[1].Text != "[image not kept: an image data: URL must be base64]" || got[2].Attachment != hexSum(small) {
		t.Fatalf("tool message = %+v", got)
	}
}

// The tool_result event names the result's stored media by reference (type, attachment,
// MIME type, name, size) and never carries their bytes.
func TestToolResultEventCarriesMediaReferencesNotBytes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	shot := FuncTool{ToolSpec: ToolSpec{Name: "shot"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return ToolResult{Content: []Part{TextPart("a shot"), {Type: PartImage, Data: png, Name: "s.png"}}}, nil
	}}
	a := newAgent(t, Config{Model: script(turn{calls: []ToolCall{call("c1", "shot", `{}`)}}, turn{text: "seen"}), Tools: tools(t, shot)})
	var got *ToolResultData
	if _, err := a.RunWith(context.Background(), userIn("s", "go"), func(e Event) {
		if d, ok := e.Data.(*ToolResultData); ok {
			c := *d
			got = &c
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := []Part{{Type: PartImage, Attachment: hexSum(png), MimeType: "image/png", Name: "s.png", Size: int64(len(png))}}
	if got == nil || got.Content != "a shot" || !reflect.DeepEqual(got.Media, want) {
		t.Fatalf("tool_result = %+v, want media %+v", got, want)
	}
}
