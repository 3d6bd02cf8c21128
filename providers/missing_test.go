package providers_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// An adapter of ours missing from a checkout is an error naming it and the one command
// that builds it, before anything is started (not the confinement's ENOENT from inside
// the handshake).
func TestMissingAdapterInACheckoutNamesItAndMakeBuild(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/agenthost/agenthost\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := filepath.Join(root, "bin", "agenthost-provider-openai")
	_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "openai", Command: cmd})
	want := `start provider "openai": adapter ` + cmd + ` does not exist; build it with: make -C ` + root + ` build`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant   %s", err, want)
	}
}

// A bare adapter name found neither beside the host nor on PATH is installed with go install.
func TestMissingAdapterOnPathNamesGoInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "a", Command: "agenthost-provider-anthropic"})
	want := `start provider "a": adapter agenthost-provider-anthropic is neither beside agenthost nor on PATH; build it with: go install github.com/agenthost/agenthost/cmd/agenthost-provider-anthropic@latest`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant   %s", err, want)
	}
}

// Someone else's missing adapter is named, with no command we cannot know.
func TestMissingForeignAdapterIsNamedWithoutHint(t *testing.T) {
	cmd := filepath.Join(t.TempDir(), "my-adapter")
	_, err := providers.Start(context.Background(), providers.ClientConfig{Name: "x", Command: cmd})
	want := `start provider "x": adapter ` + cmd + ` does not exist`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant   %s", err, want)
	}
}
