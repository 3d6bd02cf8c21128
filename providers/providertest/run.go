package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

// Start starts the adapter cfg names and closes it when the test ends.
func Start(t testing.TB, cfg providers.ClientConfig) *providers.Client {
	t.Helper()
	c, err := providers.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Hello is a request of one user message, "Hello".
func Hello() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []*providers.Message{
		{Role: providers.RoleUser, Content: []*providers.Part{{Type: providers.PartText, Text: "Hello"}}},
	}}
}

// Run makes one call (30s at most) and returns its events, each as FormatEvent writes
// it, and the error Recv ended with (io.EOF after a finish).
func Run(t testing.TB, c *providers.Client, req *providers.ChatRequest) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var got []string
	for {
		ev, err := st.Recv()
		if err != nil {
			return got, err
		}
		got = append(got, providers.FormatEvent(ev))
	}
}

// Case is one recording and what the adapter must make of it: exactly these events,
// then exactly Err (nil: the stream ends with io.EOF).
type Case struct {
	File   string
	Events []string
	Err    *providers.Error
}

// CheckRecordings replays each case's recording through c (a Hello request), in a
// subtest named after the file, and checks the exact events and the exact error.
func CheckRecordings(t *testing.T, r *Replay, c *providers.Client, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.File, ".http"), func(t *testing.T) {
			r.Use(tc.File)
			got, err := Run(t, c, Hello())
			if strings.Join(got, "\n") != strings.Join(tc.Events, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.Events, "\n"))
			}
			if tc.Err == nil {
				if err != io.EOF {
					t.Fatalf("stream ended with %v, want io.EOF", err)
				}
				return
			}
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want %+v", err, err, tc.Err)
			}
			if *pe != *tc.Err {
				t.Fatalf("err = %+v\nwant  %+v", *pe, *tc.Err)
			}
		})
	}
}

// Canonical re-encodes JSON indented with sorted keys, for exact comparisons of request
// bodies; data that is not JSON fails the test.
func Canonical(t testing.TB, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// CanonicalCompact is Canonical on one line.
func CanonicalCompact(t testing.TB, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
