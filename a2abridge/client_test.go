package a2abridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	legacy "github.com/a2aproject/a2a-go/a2a"
	legacysrv "github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agenthost/agenthost/loop"
)

// echo1 is an A2A 1.0 agent (a2a-go v2) that answers "1.0: " + the question.
type echo1 struct{}

func (echo1) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("1.0: "+textOf(ec.Message))), nil)
	}
}

func (echo1) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// echo03 is an A2A 0.3 agent (a2a-go v0.3, the SDK that served 0.3 before 1.0) that
// answers "0.3: " + the question.
type echo03 struct{}

func (echo03) Execute(ctx context.Context, rc *legacysrv.RequestContext, q eventqueue.Queue) error {
	var text string
	for _, p := range rc.Message.Parts {
		if t, ok := p.(legacy.TextPart); ok {
			text += t.Text
		}
	}
	return q.Write(ctx, legacy.NewMessage(legacy.MessageRoleAgent, legacy.TextPart{Text: "0.3: " + text}))
}

func (echo03) Cancel(context.Context, *legacysrv.RequestContext, eventqueue.Queue) error { return nil }

// recorded serves h behind a bearer token, recording each JSON-RPC method it is asked.
func recorded(t *testing.T, h http.Handler) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var methods []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var rpc struct{ Method string }
		_ = json.Unmarshal(body, &rpc)
		mu.Lock()
		methods = append(methods, rpc.Method)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(methods) }
}

// The remote-agent tool speaks A2A 1.0 to a 1.0 server, and to a 0.3 server (which
// answers 1.0's SendMessage "method not found", having run nothing) 0.3, at once from the
// second call on; the token goes with every request of either version.
func TestA2AToolSpeaks10ToA10ServerAnd03ToA03Server(t *testing.T) {
	v1, v1Methods := recorded(t, a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echo1{})))
	v03, v03Methods := recorded(t, legacysrv.NewJSONRPCHandler(legacysrv.NewHandler(echo03{})))
	for _, c := range []struct {
		url, want string
		methods   func() []string
		wire      []string
	}{
		{v1.URL, "1.0: hi", v1Methods, []string{"SendMessage", "SendMessage"}},
		{v03.URL, "0.3: hi", v03Methods, []string{"SendMessage", "message/send", "message/send"}},
	} {
		tool := NewTool(Remote{Name: "peer", URL: c.url, Token: "tok"})
		for range 2 {
			res, err := tool.Call(context.Background(), loop.ToolCall{ID: "c", Name: "a2a_peer", Arguments: `{"message":"hi"}`})
			if err != nil || res.IsError || res.Text() != c.want {
				t.Fatalf("%s: %q (error %v) %v, want %q", c.url, res.Text(), res.IsError, err, c.want)
			}
		}
		if got := c.methods(); !slices.Equal(got, c.wire) {
			t.Errorf("%s: methods %q, want %q", c.want, got, c.wire)
		}
	}
}
