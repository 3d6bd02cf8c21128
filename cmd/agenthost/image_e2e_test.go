package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ulimits are this process's open-files limit and a process limit of 4096 for the
// container, instead of podman's defaults for root (1048576 open files), which a
// process without CAP_SYS_RESOURCE (a container runner's, a CI sandbox's) may not set:
// crun and runc then refuse to start the container (setrlimit: operation not permitted).
// Lowering a limit needs no privilege.
func ulimits() []string {
	var nofile syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) != nil {
		nofile.Cur = 1024
	}
	return []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Cur), "--ulimit", "nproc=4096:4096"}
}

// containerRuntime is the podman global flag that picks the OCI runtime: none (podman's
// default, crun on Debian) when the default starts a container from the image, else
// runc when it is installed and crun refused for a reason runc does not have: crun
// refuses a kernel whose cgroups are in hybrid mode (v1 controllers beside v2), which
// runc supports.
func containerRuntime(t *testing.T, tag string) []string {
	t.Helper()
	probe := append([]string{"run", "--rm"}, append(ulimits(), tag, "version")...)
	out, err := podman(probe...)
	if err == nil {
		return nil
	}
	if _, lerr := exec.LookPath("runc"); lerr == nil && strings.Contains(out, "cgroups in hybrid mode") {
		if out2, err := podman(append([]string{"--runtime", "runc"}, probe...)...); err == nil {
			t.Logf("crun cannot start a container on this kernel (%s); runc can", strings.TrimSpace(out))
			return []string{"--runtime", "runc"}
		} else {
			out += "\nwith runc: " + out2
		}
	}
	t.Fatalf("podman cannot start a container from the image: %v\n%s", err, out)
	return nil
}

// podman runs podman and returns its combined output.
func podman(args ...string) (string, error) {
	out, err := exec.Command("podman", args...).CombinedOutput()
	return string(out), err
}

// Issue 52's image: built by podman from the Containerfile and scripts/image.sh's
// context, it runs as the non-root user 65532 with agenthost as its entry point; run with
// agent.toml, the scripted provider's script and a plugin mounted, and a data directory
// for its SQLite store, it serves a run that calls the plugin. It carries its SBOM
// (checkSBOM); pushed to a registry and signed keylessly, it verifies (checkSignedImage).
// `make test` runs it (`make deps` installs podman: scripts/deps.d/image.sh); `make
// test-image` runs it alone.
func TestE2E_ImageServesARunWithAMountedPlugin(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("the image test needs podman: `make deps` installs it (scripts/deps.d/image.sh)")
	}
	ctxDir := t.TempDir()
	prep := exec.Command("bash", "scripts/image.sh", ctxDir)
	prep.Dir = repoRoot
	prep.Env = append(os.Environ(), "VERSION=v0.0.0-imagetest")
	if out, err := prep.CombinedOutput(); err != nil {
		t.Fatalf("image.sh: %v\n%s", err, out)
	}
	rootfs := filepath.Join(ctxDir, "rootfs")
	checkSBOM(t, filepath.Join(rootfs, "usr/local/share/agenthost/sbom.cdx.json"), "v0.0.0-imagetest", filepath.Join(rootfs, "usr/local/bin"))
	tag := fmt.Sprintf("localhost/agenthost-test:%d", time.Now().UnixNano())
	if out, err := podman("build", "-q", "-f", filepath.Join(ctxDir, "Containerfile"), "-t", tag, ctxDir); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rmi", "-f", tag) })
	out, err := podman("image", "inspect", tag)
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	var img []struct {
		Size   int64
		Config struct {
			User       string
			Entrypoint []string
		}
	}
	if err := json.Unmarshal([]byte(out), &img); err != nil || len(img) != 1 {
		t.Fatalf("inspect: %v %s", err, out)
	}
	if c := img[0].Config; c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/usr/local/bin/agenthost" {
		t.Fatalf("image config: user %q entrypoint %q", c.User, c.Entrypoint)
	}
	t.Logf("image size: %.1f MB", float64(img[0].Size)/1e6)

	// The mounts: /etc/agenthost (agent.toml, the script), /plugins, /data (writable).
	conf, plugins, data := t.TempDir(), t.TempDir(), t.TempDir()
	os.Chmod(data, 0o777) // the container's user writes its store there
	calc, err := os.ReadFile(filepath.Join(repoRoot, "plugins/examples/go/calc/calc.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(plugins, "calc.wasm"), calc, 0o644)
	os.WriteFile(filepath.Join(conf, "script.json"), []byte(`{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "It is {{result c1}}."}]}`), 0o644)
	os.WriteFile(filepath.Join(conf, "agent.toml"), []byte(`[agent]
name = "image"
system_prompt = "You compute."
provider = "scripted"
model = "demo"

[providers.scripted]
command = "/usr/local/bin/agenthost-provider-scripted"
options = { script = "/etc/agenthost/script.json" }

[store]
kind = "sqlite"
path = "/data/sessions.db"

[[plugins]]
name = "calc"
wasm = "/plugins/calc.wasm"
`), 0o644)
	name := strings.ReplaceAll(strings.TrimPrefix(tag, "localhost/agenthost-test:"), ":", "")
	args := append(containerRuntime(t, tag), "run", "--rm", "--name", "agenthost-test-"+name, "--network", "host", "--read-only")
	args = append(args, ulimits()...)
	args = append(args, "-v", conf+":/etc/agenthost:ro", "-v", plugins+":/plugins:ro", "-v", data+":/data", "--tmpfs", "/tmp",
		tag, "-c", "/etc/agenthost/agent.toml", "serve", "--addr", "127.0.0.1:0") // it reports the port it took
	run := exec.Command("podman", args...)
	stderr, _ := run.StderrPipe()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { podman("rm", "-f", "agenthost-test-"+name); run.Wait() })
	served, log := make(chan string, 1), &lockedLog{}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.add(sc.Text())
			if _, base, ok := strings.Cut(sc.Text(), "serving on "); ok {
				served <- base
			}
		}
		close(served)
	}()
	var base string
	select {
	case base = <-served:
		if base == "" {
			t.Fatalf("the container did not serve:\n%s", log.String())
		}
	case <-time.After(readyBound):
		t.Fatalf("the container did not serve:\n%s", log.String())
	}
	ev := startSSE(t, post(t, base+"/v1/runs", `{"threadId":"i1","runId":"r1","messages":[{"id":"u1","role":"user","content":"what is 6*7?"}]}`))
	fin := ev.until(t, "RUN_FINISHED")
	if res := fin["result"].(map[string]any); res["status"] != "completed" || res["text"] != "It is 42." {
		t.Fatalf("the run in the container ended %v; events %v", fin, types(ev.all))
	}
	checkSignedImage(t, tag)
}

// lockedLog is a process's standard error as read so far.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
