package providers_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// A server that refuses the connection, or a name that does not resolve, is said with the
// address tried and the variable that sets it, retryable; any other error is not this one.
func TestUnreachableNamesTheAddressAndTheSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err == nil {
		t.Fatal("a closed port answered")
	}
	got := providers.Unreachable("openai", "OPENAI_BASE_URL", err)
	want := "openai: cannot connect to http://" + addr + " (connection refused): start the model server there, or set OPENAI_BASE_URL (or the provider's options.base_url) to where it listens"
	if got == nil || got.Message != want || !got.Retryable || got.Kind != providers.KindProvider {
		t.Fatalf("refused: %+v\nwant %q", got, want)
	}
	dns := &url.Error{Op: "Post", URL: "https://llm.invalid/v1/messages", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "llm.invalid", IsNotFound: true}}}
	got = providers.Unreachable("anthropic", "ANTHROPIC_BASE_URL", dns)
	if got == nil || !strings.HasPrefix(got.Message, "anthropic: cannot connect to https://llm.invalid (lookup llm.invalid: no such host): ") ||
		!strings.Contains(got.Message, "ANTHROPIC_BASE_URL") {
		t.Fatalf("no such host: %+v", got)
	}
	for _, other := range []error{io.ErrUnexpectedEOF, errors.New("HTTP 500"), &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}} {
		if u := providers.Unreachable("openai", "OPENAI_BASE_URL", other); u != nil {
			t.Fatalf("%v taken for an unreachable server: %+v", other, u)
		}
	}
}
