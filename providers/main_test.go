package providers_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/providers"
)

// scriptedBin is the real adapter binary, built once for the package's tests (testbin).
var scriptedBin string

func TestMain(m *testing.M) {
	if os.Getenv(hostHelperEnv) != "" {
		runHostHelper() // never returns
	}
	if kind := os.Getenv(sessionHelperEnv); kind != "" {
		runSessionHelper(kind) // never returns
	}
	if os.Getenv(adapterHelperEnv) != "" {
		providers.Serve(procsProvider{}) // never returns
	}
	scriptedBin = testbin.Must(testbin.Scripted)
	code := m.Run()
	providers.CleanupClients()
	testbin.Cleanup()
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
