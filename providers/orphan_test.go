package providers_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

// hostHelperEnv turns the test binary into a stand-in host: it starts the
// adapter named by the variable, prints the adapter's pid and waits to be
// killed. See TestHostKilledLeavesNoAdapter.
const hostHelperEnv = "AGENTHOST_PROVIDERS_TEST_HOST"

func runHostHelper() {
	c, err := providers.Start(context.Background(), providers.ClientConfig{Name: "scripted", Command: os.Getenv(hostHelperEnv)})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("pid %d\n", c.PID())
	select {}
}

// TestHostKilledLeavesNoAdapter: a host that is SIGKILLed cannot clean up, so
// the adapter must notice by itself that its parent is gone and exit.
func TestHostKilledLeavesNoAdapter(t *testing.T) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostHelperEnv+"="+scriptedBin)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		host.Process.Kill()
		host.Wait()
		t.Fatalf("host helper said %q, %v", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil || pid <= 0 {
		t.Fatalf("bad pid line %q", line)
	}
	if !alive(pid) {
		t.Fatalf("adapter %d is not running while its host is", pid)
	}

	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()

	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("adapter %d still running 20s after its host was SIGKILLed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid is a running process; a zombie (exited, not yet
// reaped by whoever adopted it) counts as gone.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}
