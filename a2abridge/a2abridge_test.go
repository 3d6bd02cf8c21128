package a2abridge

import (
	"io"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// What a remote agent answers becomes the tool's result: completed tasks and messages are
// the answer, every other end an error result naming the state.
func TestRemoteAnswersBecomeToolResults(t *testing.T) {
	task := func(state a2a.TaskState, text string) *a2a.Task {
		return &a2a.Task{Status: a2a.TaskStatus{State: state, Message: a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(text))},
			Artifacts: []*a2a.Artifact{{Parts: a2a.ContentParts{a2a.NewTextPart("arti"), a2a.NewTextPart("fact")}}}}
	}
	for _, c := range []struct {
		res     a2a.SendMessageResult
		want    string
		isError bool
	}{
		{a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hi")), "hi", false},
		{task(a2a.TaskStateCompleted, "done"), "artifact\ndone", false},
		{task(a2a.TaskStateCompleted, "artifact"), "artifact", false}, // agenthost's answer is both
		{task(a2a.TaskStateInputRequired, "approve?"), "Error: agent geo needs input it cannot get here (input-required): artifact\napprove?", true},
		{task(a2a.TaskStateFailed, "boom"), "Error: agent geo: task failed: artifact\nboom", true},
	} {
		got := answer("geo", c.res)
		if got.Text() != c.want || got.IsError != c.isError {
			t.Errorf("answer(%T) = %q (error %v), want %q (error %v)", c.res, got.Text(), got.IsError, c.want, c.isError)
		}
	}
}

func TestAnswersAreBounded(t *testing.T) {
	l := &limited{rc: io.NopCloser(strings.NewReader(strings.Repeat("a", 100))), left: 10}
	b, err := io.ReadAll(l)
	if len(b) != 10 || err == nil || !strings.Contains(err.Error(), "max_output") {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
}

func TestApprovalWords(t *testing.T) {
	for s, want := range map[string]bool{"approve": true, "Yes.": true, " ok ": true, "no": false, "approve it later": false, "": false} {
		if isYes(s) != want {
			t.Errorf("isYes(%q) != %v", s, want)
		}
	}
}
