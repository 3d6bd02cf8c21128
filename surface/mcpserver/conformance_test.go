//lint:file-ignore SA1019 MCP sampling, roots and logging are deprecated as of the 2026-07-28 protocol but still served in its deprecation window; agenthost supports them for the servers and clients that use them

package mcpserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// The MCP conformance suite's fixture plugin (plugins/examples/go/conformance), built from
// source, served by a host with no provider as `mcp serve` runs it.
var fixture struct {
	once sync.Once
	wasm string
	err  error
}

func fixtureServer(t *testing.T) *mcp.Server {
	t.Helper()
	buildPlugins(t) // for wasm.cache
	fixture.once.Do(func() {
		fixture.wasm = filepath.Join(filepath.Dir(wasm.cache), "conformance.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", fixture.wasm, "../../plugins/examples/go/conformance")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixture.err = fmt.Errorf("build the conformance plugin: %v\n%s", err, out)
		}
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	p := filepath.Join(t.TempDir(), "agent.toml")
	os.WriteFile(p, []byte(fmt.Sprintf("[agent]\nname = \"a\"\n[store]\nkind = \"memory\"\n[[plugins]]\nname = \"conformance\"\nwasm = %q\n"+
		"[plugins.permissions]\nmodel = true\n", fixture.wasm)), 0o644)
	h, err := host.Open(context.Background(), host.Options{Manifest: p, NoProvider: true, CacheDir: wasm.cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv, skipped := New(h, "test")
	if len(skipped) > 0 {
		t.Fatalf("skipped %v", skipped)
	}
	return srv
}

// clientWith connects a client of the 2025-11-25 revision (the conformance suite's)
// declaring what opts sets (sampling, elicitation); version, when set, is another.
func clientWith(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions, version ...string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	v := "2025-11-25"
	if len(version) > 0 {
		v = version[0]
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// completion/complete asks the plugin that offers the prompt or template, with what the
// user typed; a reference no plugin offers is invalid params, not an empty answer.
func TestCompletionAsksThePluginThatOffersTheReference(t *testing.T) {
	srv := fixtureServer(t)
	cs := clientWith(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		ref       mcp.CompleteReference
		arg, text string
		want      string
	}{
		{mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "pa", "paris,park,party"},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg2", "x", ""},
		{mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"}, "id", "12", "12,123"},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, "arg1", "", `error: calling "completion/complete": no ref/prompt "nope" is offered`},
		{mcp.CompleteReference{Type: "ref/resource", URI: "test://elsewhere/{x}"}, "x", "", `error: calling "completion/complete": no ref/resource "test://elsewhere/{x}" is offered`},
	} {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &c.ref, Argument: mcp.CompleteParamsArgument{Name: c.arg, Value: c.text}})
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = strings.Join(res.Completion.Values, ",")
		}
		if got != c.want {
			t.Errorf("%+v %s=%q: got %q, want %q", c.ref, c.arg, c.text, got, c.want)
		}
	}
}

// A client may subscribe to the resources a plugin lists, and to nothing else.
func TestSubscribeOnlyToTheResourcesPluginsOffer(t *testing.T) {
	cs := clientWith(t, fixtureServer(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///etc/passwd"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("subscribe to what no plugin offers: %v", err)
	}
}

// A plugin's elicitation and sampling during a call reach the client that made the call
// when it declared them; without them (or on the 2026-07-28 revision, where a server may
// not ask while it serves a call) the elicitation is declined and sampling has no model
// to go to (mcp serve without --agent runs none).
func TestPluginElicitationAndSamplingGoToTheCallingClient(t *testing.T) {
	srv := fixtureServer(t)
	var asked, sampled []string
	var mu sync.Mutex
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ana", "email": "ana@example.com"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			sampled = append(sampled, r.Params.Messages[0].Content.(*mcp.TextContent).Text)
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		}}
	able := clientWith(t, srv, opts)
	if got, isErr := callText(t, able, "test_elicitation", map[string]any{"message": "who are you?"}); isErr ||
		got != `User response: action=accept, content={"email":"ana@example.com","username":"ana"}` {
		t.Fatalf("elicitation: %q %v", got, isErr)
	}
	if got, isErr := callText(t, able, "test_sampling", map[string]any{"prompt": "the answer?"}); isErr || got != "LLM response: forty-two" {
		t.Fatalf("sampling: %q %v", got, isErr)
	}
	if strings.Join(asked, "|") != "who are you?" || strings.Join(sampled, "|") != "the answer?" {
		t.Fatalf("the client was asked %q and sampled %q", asked, sampled)
	}
	for _, unable := range []*mcp.ClientSession{clientWith(t, srv, nil), clientWith(t, srv, opts, "2026-07-28")} {
		if got, isErr := callText(t, unable, "test_elicitation", map[string]any{"message": "who are you?"}); isErr || got != "User response: action=decline, content=null" {
			t.Fatalf("elicitation without the capability: %q %v", got, isErr)
		}
		if got, isErr := callText(t, unable, "test_sampling", map[string]any{"prompt": "the answer?"}); !isErr || !strings.Contains(got, "no model is running") {
			t.Fatalf("sampling without the capability: %q %v", got, isErr)
		}
	}
	if len(asked) != 1 || len(sampled) != 1 {
		t.Fatalf("a client that cannot be asked was asked: %q %q", asked, sampled)
	}
}
