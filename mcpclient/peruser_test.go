package mcpclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/loop"
)

// A per-user server calls with the run's user's own token over that user's own
// connection: many concurrent first calls of two users open one connection each, every
// call reaches the server as its user; a user with no token, or none at all, gets no
// call; a closed server refuses; the catalogue's allow and skip lists hold.
func TestPerUserServerCallsWithEachUsersOwnToken(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil, nil
	})
	owners := map[string]string{"tok-ana": "ana", "tok-bo": "bo"}
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if who, ok := owners[tok]; ok {
			return &auth.TokenInfo{UserID: who, Expiration: time.Now().Add(time.Hour)}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	var inits atomic.Int32
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { inits.Add(1); return srv }, nil))
	hs := httptest.NewServer(h)
	defer hs.Close()

	var sources atomic.Int32
	s, err := Start(context.Background(), Config{Name: "remote", URL: hs.URL, SkipTools: []string{"hidden"}, PerUser: &PerUser{
		Tools: []Tool{{Name: "whoami"}, {Name: "hidden"}},
		Source: func(_ context.Context, user string) (oauth2.TokenSource, error) {
			sources.Add(1)
			if user == "cy" {
				return nil, ErrNotConnected
			}
			return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok-" + user}), nil
		},
		Login: func(user string) loop.InputRequest { return loop.InputRequest{Message: "connect, " + user} },
	}})
	if err != nil {
		t.Fatal(err)
	}
	if tools := s.Tools(); len(tools) != 1 || tools[0].Name != "whoami" || !s.PerUserAuth() || s.HasResources() {
		t.Fatalf("tools %v", tools)
	}
	as := func(user string) context.Context {
		return loop.WithCallInfo(context.Background(), loop.CallInfo{SessionID: "s", User: user})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		user := []string{"ana", "bo"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Call(as(user), "whoami", []byte(`{}`))
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != user {
				errs <- errors.New(user + "'s call: " + func() string {
					if err != nil {
						return err.Error()
					}
					return res.Content[0].Text
				}())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s.mu.Lock()
	conns := len(s.users)
	s.mu.Unlock()
	if conns != 2 {
		t.Fatalf("%d connections kept, want ana's and bo's", conns)
	}
	_, err = s.Call(as("cy"), "whoami", []byte(`{}`))
	var ir *loop.InputRequiredError
	if !errors.As(err, &ir) || ir.Request.Message != "connect, cy" {
		t.Fatalf("cy, not connected: %v", err)
	}
	if res, err := s.Call(as(""), "whoami", []byte(`{}`)); err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "this run has no user") {
		t.Fatalf("no user: %+v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(as("ana"), "whoami", []byte(`{}`)); !errors.Is(err, errClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
