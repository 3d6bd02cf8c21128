package providers_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

func startWith(t *testing.T, fixture string, cfg providers.ClientConfig) *providers.Client {
	t.Helper()
	script := filepath.Join(t.TempDir(), "fixture.json")
	if err := os.WriteFile(script, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Name, cfg.Command, cfg.Options, cfg.Stderr = "scripted", scriptedBin, map[string]string{"script": script}, testWriter{t}
	c, err := providers.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHole9_FirstTokenTimeoutIsARetryableErrorAndTheProcessStays: a call whose first
// event does not come within first_token_timeout fails with a retryable error instead
// of hanging; the adapter process is kept and the next call is answered.
func TestHole9_FirstTokenTimeoutIsARetryableErrorAndTheProcessStays(t *testing.T) {
	// 5 s: the second call's first event must come within it on a busy machine.
	c := startWith(t, `{"turns": [{"delay_ms": 600000, "text": "never"}, {"text": "second"}]}`,
		providers.ClientConfig{FirstTokenTimeout: 5 * time.Second})
	pid := c.PID()
	req := &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}}
	st, err := c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindProvider || !pe.Retryable ||
		pe.Message != `provider "scripted": no event within first_token_timeout (5s)` {
		t.Fatalf("err = %#v", err)
	}
	st, err = c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	if !errors.Is(err, io.EOF) || !strings.Contains(join(got), `text "second"`) {
		t.Fatalf("second call: %v, %q", err, got)
	}
	if c.PID() != pid {
		t.Fatalf("adapter restarted after a timeout: pid %d -> %d", pid, c.PID())
	}
}

// TestHole9_IdleTimeoutEndsASilentStream: a stream that stops mid-way fails after
// idle_timeout with the events it did send delivered first.
func TestHole9_IdleTimeoutEndsASilentStream(t *testing.T) {
	c := startWith(t, `{"turns": [{"text": "abc", "chunk": 1, "chunk_delay_ms": 600000}]}`,
		providers.ClientConfig{IdleTimeout: 200 * time.Millisecond})
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	var pe *providers.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Message != `provider "scripted": no event for idle_timeout (200ms) mid-stream` {
		t.Fatalf("err = %#v", err)
	}
	if join(got) != `1 text "a"` {
		t.Fatalf("events before the silence: %q", got)
	}
}

// The two timeouts are independent: with first_token_timeout off, a stream that stops
// mid-way still fails after idle_timeout.
func TestIdleTimeoutHoldsWithTheFirstTokenTimeoutOff(t *testing.T) {
	c := startWith(t, `{"turns": [{"text": "abc", "chunk": 1, "delay_ms": 300, "chunk_delay_ms": 600000}]}`,
		providers.ClientConfig{FirstTokenTimeout: -1, IdleTimeout: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // without the idle timeout: a failure, not a hang
	defer cancel()
	st, err := c.Stream(ctx, &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	var pe *providers.Error
	if !errors.As(err, &pe) || !pe.Retryable || pe.Message != `provider "scripted": no event for idle_timeout (200ms) mid-stream` {
		t.Fatalf("err = %#v", err)
	}
	if join(got) != `1 text "a"` {
		t.Fatalf("events before the silence: %q", got)
	}
}

// A slow but steady stream is not cut: the idle timer restarts at every event.
func TestHole9_SteadyStreamIsNotCut(t *testing.T) {
	// Twenty pauses of 300ms add up to more than either timeout; no single one comes close
	// (3.7 s spare each, for a busy 2-core machine under -race; 1.3 s was the spare before).
	c := startWith(t, `{"turns": [{"text": "abcdefghijklmnopqrst", "chunk": 1, "delay_ms": 300, "chunk_delay_ms": 300}]}`,
		providers.ClientConfig{FirstTokenTimeout: 4 * time.Second, IdleTimeout: 4 * time.Second})
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	if !errors.Is(err, io.EOF) || !strings.Contains(join(got), `text "t"`) {
		t.Fatalf("err %v, events %q", err, got)
	}
}

// TestHole8_InvalidUTF8InTheRequestIsReplaced: protobuf refuses invalid UTF-8 in string
// fields; the client repairs the request, and the adapter sees U+FFFD.
func TestHole8_InvalidUTF8InTheRequestIsReplaced(t *testing.T) {
	c := startWith(t, `{"turns": [{"expect": {"contains": "caf\ufffd"}, "text": "ok"}]}`, providers.ClientConfig{})
	bad := "caf\xe9 \xff\xfe"
	req := &providers.ChatRequest{Messages: []*providers.Message{
		userMsg(bad),
		{Role: providers.RoleTool, ToolCallId: "c\xff1", Content: []*providers.Part{{Type: providers.PartText, Text: "out\xc3"}}},
	}, Tools: []*providers.Tool{{Name: "t", Description: "d\x80", InputSchema: `{"type":"object"}`}}}
	st, err := c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	if !errors.Is(err, io.EOF) || !strings.Contains(join(got), `text "ok"`) {
		t.Fatalf("err %v, events %q", err, got)
	}
	if req.Messages[0].Content[0].Text != "caf\ufffd \ufffd" || req.Messages[1].ToolCallId != "c\ufffd1" ||
		req.Messages[1].Content[0].Text != "out\ufffd" || req.Tools[0].Description != "d\ufffd" {
		t.Fatalf("request not repaired: %q %q %q %q", req.Messages[0].Content[0].Text, req.Messages[1].ToolCallId,
			req.Messages[1].Content[0].Text, req.Tools[0].Description)
	}
}
