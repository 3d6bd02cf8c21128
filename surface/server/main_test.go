package server

import (
	"os"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/store/pgtest"
)

func TestMain(m *testing.M) {
	testbin.ShareWasmCache() // each test's host compiles a module once per machine, not once per test
	code := m.Run()
	stopSharedBrowser() // browser_test.go: the console tests' one Chromium, if one started
	pgtest.Stop()       // the PostgreSQL server of the two-node benchmark, if it ran
	testbin.Cleanup()
	os.Exit(code)
}
