package providers_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// scriptedBin is the real adapter binary, built once for the package's tests.
var scriptedBin string

func TestMain(m *testing.M) {
	if os.Getenv(hostHelperEnv) != "" {
		runHostHelper() // never returns
	}
	dir, err := os.MkdirTemp("", "providers-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scriptedBin = filepath.Join(dir, "agenthost-provider-scripted")
	build := exec.Command("go", "build", "-o", scriptedBin, "../cmd/agenthost-provider-scripted")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build scripted adapter:", err)
		os.Exit(1)
	}
	code := m.Run()
	providers.CleanupClients()
	os.RemoveAll(dir)
	os.Exit(code)
}

func collect(t *testing.T, st providers.EventStream) ([]string, error) {
	t.Helper()
	var got []string
	for {
		ev, err := st.Recv()
		if err != nil {
			return got, err
		}
		got = append(got, providers.FormatEvent(ev))
	}
}

func join(s []string) string { return strings.Join(s, "\n") }
