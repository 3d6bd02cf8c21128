package providers_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

// adapterHelperEnv turns the test binary into an adapter (providers.Serve) whose Info
// names the GOMAXPROCS it runs with. See TestAdapterRunsOnOneThreadUnlessGOMAXPROCSIsSet.
const adapterHelperEnv = "AGENTHOST_PROVIDERS_TEST_ADAPTER"

type procsProvider struct{}

func (procsProvider) Configure(context.Context, map[string]string) error { return nil }
func (procsProvider) Info(context.Context) (*providers.Info, error) {
	return &providers.Info{Name: "procs", Models: []string{strconv.Itoa(runtime.GOMAXPROCS(0))}}, nil
}
func (procsProvider) Stream(_ context.Context, req *providers.ChatRequest, send func(*providers.ChatEvent) error) error {
	if req.GetModel() == "log" {
		// What an adapter logs while it serves: go-plugin has swapped os.Stderr for a
		// pipe to the host by now.
		fmt.Fprintln(os.Stderr, "adapter log line during a call")
		return send(providers.FinishEvent("end_turn"))
	}
	return nil
}

// Serve runs an adapter's Go code on one thread, unless the adapter's environment (the
// manifest's env) sets GOMAXPROCS, which then counts.
func TestAdapterRunsOnOneThreadUnlessGOMAXPROCSIsSet(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{adapterHelperEnv + "=1"}, "1"},
		{[]string{adapterHelperEnv + "=1", "GOMAXPROCS=3"}, "3"},
	} {
		c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "procs", Command: os.Args[0], Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(context.Background())
		c.Close()
		if err != nil || strings.Join(info.GetModels(), ",") != tc.want {
			t.Fatalf("env %v: GOMAXPROCS %v, want %s (%v)", tc.env, info.GetModels(), tc.want, err)
		}
	}
}

// With AGENTHOST_PROVIDER_CPUPROFILE passed, the adapter writes its CPU profile there,
// complete once Close has stopped it (a gzipped pprof file).
func TestAdapterWritesItsCPUProfileWhereTheEnvSays(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "adapter.prof")
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "scripted", Command: scriptedBin,
		Env: []string{providers.CPUProfileEnv + "=" + prof}, Options: map[string]string{"script": "testdata/bench.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile: %d bytes %q..., %v", len(b), b[:min(len(b), 4)], err)
	}
}

// A profile that cannot be written is said on the adapter's stderr, and the adapter
// serves anyway: a diagnosis never stops the work.
func TestAnUnwritableCPUProfileDoesNotStopTheAdapter(t *testing.T) {
	var stderr lockedBuffer
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "scripted", Command: scriptedBin, Stderr: &stderr,
		Env: []string{providers.CPUProfileEnv + "=/nonexistent/dir/adapter.prof"}, Options: map[string]string{"script": "testdata/bench.json"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	events, err := collect(t, st)
	if err != io.EOF || len(events) != 5 {
		t.Fatalf("call: %v %v", events, err)
	}
	if got := stderr.String(); !strings.Contains(got, providers.CPUProfileEnv+": open /nonexistent/dir/adapter.prof") {
		t.Fatalf("stderr: %q", got)
	}
}

// What an adapter writes to os.Stderr while it serves (go-plugin has made that a pipe to
// the host by then) reaches ClientConfig.Stderr, as its start-up output and crashes do.
func TestAnAdapterLogWrittenWhileServingReachesStderr(t *testing.T) {
	var stderr lockedBuffer
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "procs", Command: os.Args[0],
		Env: []string{adapterHelperEnv + "=1"}, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Model: "log", Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if events, err := collect(t, st); err != io.EOF || len(events) != 1 {
		t.Fatalf("call: %v %v", events, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "adapter log line during a call") {
		if time.Now().After(deadline) {
			t.Fatalf("stderr: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
