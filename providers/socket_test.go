package providers_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// A real adapter: its socket is in a directory of its own, private to this user, so the
// connection goes without TLS; the directory goes with the process.
func TestAdapterSocketLivesInAPrivateDirectoryAndSkipsTLS(t *testing.T) {
	abs, _ := filepath.Abs("testdata/demo.json")
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "scripted", Command: scriptedBin, Options: map[string]string{"script": abs}})
	if err != nil {
		t.Fatal(err)
	}
	addr, dir, tls := providers.SocketOf(c)
	sockDir := filepath.Dir(addr.String())
	fi, err := os.Stat(sockDir)
	if addr.Network() != "unix" || err != nil || fi.Mode().Perm() != 0o700 || sockDir != dir || tls {
		t.Fatalf("socket %s %s in %s (%v, %v), tls %v", addr.Network(), addr, sockDir, fi.Mode(), err, tls)
	}
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatalf("a call over the plain socket: %v", err)
	}
	c.Close()
	if _, err := os.Stat(sockDir); !os.IsNotExist(err) {
		t.Fatalf("the socket directory outlived its adapter: %v", err)
	}
}
