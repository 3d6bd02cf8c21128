package a2abridge

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// An A2A file part (raw bytes) reaches the model as a file part whose type the bytes
// say (the mediaType given is not trusted), stored with the session by hash; an image by
// URL stays a URL; a file by another URL is named, not fetched.
func TestA2AFilePartsReachTheModelAsMedia(t *testing.T) {
	m := looptest.NewModel(looptest.Turn{Text: "read"})
	agent, err := loop.New(loop.Config{Name: "a", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	x := &Executor{Run: agent.RunWith}
	pdf := []byte("%PDF-1.4 quarterly")
	file := a2a.NewRawPart(pdf)
	file.Filename, file.MediaType = "q.pdf", "image/png"
	img := a2a.NewFileURLPart("https://example.com/c.png", "image/png")
	other := a2a.NewFileURLPart("https://example.com/x.zip", "application/zip")
	ec := &a2asrv.ExecutorContext{TaskID: "t", ContextID: "c", Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Read it."), file, img, other)}
	for range x.Execute(context.Background(), ec) {
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	got := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if len(got) != 4 || got[0].Text != "Read it." || got[1].Type != loop.PartFile || got[1].MimeType != "application/pdf" ||
		string(got[1].Data) != string(pdf) || got[1].Name != "q.pdf" || got[1].Attachment == "" ||
		got[2].Type != loop.PartImage || got[2].URL != "https://example.com/c.png" ||
		got[3].Text != "(a file at https://example.com/x.zip, not fetched)" {
		t.Fatalf("the model got %+v", got)
	}
}
