package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// BenchmarkServeIdle is the idle `serve` row: one op starts `agenthost serve` on a
// SQLite store with the scripted provider (bench/testdata/step.json) and no plugin,
// waits until it answers GET /readyz, and reads its resident memory (VmRSS of
// /proc/PID/status, the provider subprocess not included), then stops it. Reported:
// rss-MiB/op, the median op's figure being the table's; ns/op is start to ready (wall).
//
//	go test -run '^$' -bench ServeIdle -benchtime 5x ./bench/
func BenchmarkServeIdle(b *testing.B) {
	bin, err := testbin.Build(testbin.Agenthost)
	if err != nil {
		b.Fatal(err)
	}
	scripted, err := testbin.Build(testbin.Scripted)
	if err != nil {
		b.Fatal(err)
	}
	step, err := filepath.Abs("testdata/step.json")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	manifest := filepath.Join(dir, "agent.toml")
	err = os.WriteFile(manifest, fmt.Appendf(nil, `[agent]
name = "idle"
provider = "scripted"
model = "demo"

[providers.scripted]
command = %q
options = { script = %q }

[store]
path = %q
`, scripted, step, filepath.Join(dir, "sessions.db")), 0o644)
	if err != nil {
		b.Fatal(err)
	}
	var rss float64
	for b.Loop() {
		rss += serveIdleRSS(b, bin, manifest, dir)
	}
	b.ReportMetric(rss/float64(b.N), "rss-MiB/op")
}

// serveIdleRSS starts serve, waits for /readyz and returns its VmRSS in MiB.
func serveIdleRSS(b *testing.B, bin, manifest, dir string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-c", manifest, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTHOST_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "agenthost: serving on "); ok {
				a = strings.TrimPrefix(a, "http://")
				addr <- a
			}
		}
		close(addr)
	}()
	a, ok := <-addr
	if !ok {
		b.Fatal("serve exited before it served")
	}
	for { // ready: polled, bounded by ctx
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			b.Fatalf("serve not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
