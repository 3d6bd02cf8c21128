package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Each hostile plugin must end as an error result within its limit + 1s,
// leave its plugin usable for the next call, and not disturb a call running
// at the same time on another plugin.

func tools(inputs map[string]string) []ToolDecl {
	var d []ToolDecl
	for export, input := range inputs {
		d = append(d, ToolDecl{Name: export, Input: input})
	}
	return d
}

func loadHostile(t *testing.T, r *Runtime, perms Permissions) *Plugin {
	return load(t, r, Config{Name: "hostile", Wasm: fixtures.hostile, Permissions: perms,
		Tools: tools(map[string]string{"echo": "text", "loop": "", "recurse": "", "bomb": "", "flood": "", "quit": ""})})
}

func loadGuest(t *testing.T, r *Runtime, perms Permissions, host Host) *Plugin {
	return load(t, r, Config{Name: "guest", Wasm: fixtures.guest, Permissions: perms, Host: host,
		Tools: tools(map[string]string{"greet": "text", "read_file": "path", "write_file": "", "getenv": "name",
			"config": "key", "fetch": "url", "kv": "text", "ask": "", "spin": "", "hog": "", "exit": "", "fsop": "", "counter": "", "bad_utf8": "text", "nap": "text"})})
}

// misbehave runs call (the hostile one) while a bystander plugin serves
// calls, and checks the result, the time bound and the bystander's results.
func misbehave(t *testing.T, r *Runtime, limit time.Duration, call func() CallResult, isError bool, want string) {
	t.Helper()
	bystander := load(t, r, Config{Name: "bystander", Wasm: fixtures.hostile, Tools: extismTool("echo")})
	stop := make(chan struct{})
	var served atomic.Int64
	var wg sync.WaitGroup
	var stopOnce sync.Once
	// Stop the bystander before the test ends, however it ends (a Fatalf included):
	// a report from it after the end would panic the test binary.
	defer func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			text := fmt.Sprintf("bystander call %d", i)
			res, err := bystander.InvokeTool(context.Background(), "echo", []byte(fmt.Sprintf(`{"text":%q}`, text)))
			if err != nil || res.IsError || res.Text() != text {
				t.Errorf("bystander call %d: %+v %v", i, res, err)
				return
			}
			served.Add(1)
		}
	}()
	// The hostile call starts once the bystander is serving, and the
	// bystander must serve again after it.
	waitServed := func(n int64) {
		deadline := time.Now().Add(10 * time.Second)
		for served.Load() < n && time.Now().Before(deadline) && !t.Failed() {
			time.Sleep(time.Millisecond)
		}
		if served.Load() < n {
			t.Errorf("the bystander plugin stopped serving")
		}
	}
	waitServed(1)
	var res CallResult
	within(t, limit, func() { res = call() })
	waitServed(served.Load() + 1)
	stopOnce.Do(func() { close(stop) })
	wg.Wait()
	wantResult(t, res, isError, want)
}

func echoStillWorks(t *testing.T, p *Plugin) {
	t.Helper()
	wantResult(t, callTool(t, p, "echo", `{"text":"still here"}`), false, "still here")
}

func TestHostileEndlessLoop(t *testing.T) {
	r := newTestRuntime(t)
	p := loadHostile(t, r, Permissions{Timeout: time.Second})
	misbehave(t, r, time.Second, func() CallResult { return callTool(t, p, "loop", `{}`) },
		true, `plugin "hostile": loop: timed out after 1s`)
	echoStillWorks(t, p)
}

func TestHostileGoSpin(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{Timeout: 2 * time.Second}, nil)
	misbehave(t, r, 2*time.Second, func() CallResult { return callTool(t, p, "spin", `{}`) },
		true, `plugin "guest": spin: timed out after 2s`)
	wantResult(t, callTool(t, p, "greet", `{"text":"again"}`), false, "Hello, again!")
}

func TestHostileDeepRecursion(t *testing.T) {
	r := newTestRuntime(t)
	// Unwinding a deep wasm stack is slow under -race; the timeout leaves room
	// so that the trap, not the timeout, is what ends the call.
	p := loadHostile(t, r, Permissions{Timeout: 10 * time.Second})
	misbehave(t, r, 10*time.Second, func() CallResult { return callTool(t, p, "recurse", `{}`) },
		true, `plugin "hostile": recurse: trapped: stack overflow`)
	echoStillWorks(t, p)
}

func TestHostileMemoryBomb(t *testing.T) {
	r := newTestRuntime(t)
	p := loadHostile(t, r, Permissions{Memory: 4 << 20, Timeout: 2 * time.Second})
	misbehave(t, r, 2*time.Second, func() CallResult { return callTool(t, p, "bomb", `{}`) },
		true, `plugin "hostile": bomb: memory limit 4 MiB exceeded`)
	echoStillWorks(t, p)
}

func TestHostileGoMemoryHog(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{Memory: 32 << 20, Timeout: 3 * time.Second}, nil)
	misbehave(t, r, 3*time.Second, func() CallResult { return callTool(t, p, "hog", `{}`) },
		true, `plugin "guest": hog: memory limit 32 MiB exceeded`)
	wantResult(t, callTool(t, p, "greet", `{"text":"again"}`), false, "Hello, again!")
}

func TestHostileHugeOutput(t *testing.T) {
	r := newTestRuntime(t)
	p := loadHostile(t, r, Permissions{MaxOutput: 1 << 20, Timeout: 2 * time.Second})
	misbehave(t, r, 2*time.Second, func() CallResult { return callTool(t, p, "flood", `{}`) },
		true, `plugin "hostile": flood: output 8 MiB exceeds max_output 1 MiB`)
	echoStillWorks(t, p)
}

func TestHostileExit(t *testing.T) {
	r := newTestRuntime(t)
	p := loadHostile(t, r, Permissions{Timeout: time.Second})
	misbehave(t, r, time.Second, func() CallResult { return callTool(t, p, "quit", `{}`) },
		true, `plugin "hostile": quit: exited with code 3`)
	echoStillWorks(t, p)

	g := loadGuest(t, r, Permissions{Timeout: 2 * time.Second}, nil)
	misbehave(t, r, 2*time.Second, func() CallResult { return callTool(t, g, "exit", `{}`) },
		true, `plugin "guest": exit: exited with code 7`)
	wantResult(t, callTool(t, g, "greet", `{"text":"again"}`), false, "Hello, again!")
}

func TestHostilePathEscape(t *testing.T) {
	r := newTestRuntime(t)
	base := t.TempDir()
	data := filepath.Join(base, "data")
	ro := filepath.Join(base, "ro")
	for _, d := range []string{data, ro} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(base, "secret.txt")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, "top secret")
	write(filepath.Join(data, "ok.txt"), "granted")
	write(filepath.Join(ro, "ro.txt"), "read only")
	if err := os.Symlink(secret, filepath.Join(data, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(data, "up")); err != nil {
		t.Fatal(err)
	}
	p := loadGuest(t, r, Permissions{Timeout: 2 * time.Second,
		AllowedPaths: map[string]string{data: "/data", "ro:" + ro: "/ro"}}, nil)
	read := func(path string) CallResult {
		return callTool(t, p, "read_file", fmt.Sprintf(`{"path":%q}`, path))
	}

	wantResult(t, read("/data/ok.txt"), false, "granted")
	wantResult(t, read("/ro/ro.txt"), false, "read only")
	misbehave(t, r, 2*time.Second, func() CallResult { return read("/data/../secret.txt") },
		true, `plugin "guest": read_file: open /data/../secret.txt: Bad file number `+p.fsNote())
	wantResult(t, read("/data/link"), true, `plugin "guest": read_file: open /data/link: Operation not permitted `+p.fsNote())
	wantResult(t, read("/data/up/secret.txt"), true, `plugin "guest": read_file: open /data/up/secret.txt: Operation not permitted `+p.fsNote())
	wantResult(t, read(secret), true, fmt.Sprintf(`plugin "guest": read_file: open %s: Bad file number %s`, secret, p.fsNote()))
	wantResult(t, callTool(t, p, "write_file", `{"path":"/ro/new.txt","text":"x"}`), true,
		`plugin "guest": write_file: open /ro/new.txt: Read-only file system `+p.fsNote())
	wantResult(t, callTool(t, p, "write_file", `{"path":"/data/new.txt","text":"written"}`), false, "ok")
	wantResult(t, read("/data/new.txt"), false, "written")
}

func TestHostileEnvSnooping(t *testing.T) {
	r := newTestRuntime(t)
	t.Setenv("AGENTHOST_SECRET", "s3cret")
	t.Setenv("AGENTHOST_GRANTED", "visible")
	p := loadGuest(t, r, Permissions{Env: []string{"AGENTHOST_GRANTED"}}, nil)
	misbehave(t, r, DefaultTimeout, func() CallResult { return callTool(t, p, "getenv", `{"name":"AGENTHOST_SECRET"}`) },
		true, `plugin "guest": getenv: AGENTHOST_SECRET is not set (environ: "AGENTHOST_GRANTED=visible")`)
	wantResult(t, callTool(t, p, "getenv", `{"name":"AGENTHOST_GRANTED"}`), false, "visible")
}

// twoServers starts an allowed and a forbidden loopback server. The allowed
// one answers /ok and redirects /hop to the forbidden one, which counts the
// requests that reach it (there must be none).
func twoServers(t *testing.T) (allowed, forbidden *httptest.Server, hits *atomic.Int64) {
	hits = new(atomic.Int64)
	forbidden = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "leaked")
	}))
	t.Cleanup(forbidden.Close)
	allowed = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, forbidden.URL+"/stolen", http.StatusFound)
			return
		}
		fmt.Fprint(w, "fine")
	}))
	t.Cleanup(allowed.Close)
	return allowed, forbidden, hits
}

func hostPort(t *testing.T, s *httptest.Server) string {
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestHostileDeniedHost(t *testing.T) {
	r := newTestRuntime(t)
	allowed, forbidden, hits := twoServers(t)
	p := loadGuest(t, r, Permissions{Timeout: 2 * time.Second, AllowedHosts: []string{hostPort(t, allowed)}}, nil)
	fetch := func(u string) CallResult { return callTool(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, u)) }

	wantResult(t, fetch(allowed.URL+"/ok"), false, "200 fine")
	misbehave(t, r, 2*time.Second, func() CallResult { return fetch(forbidden.URL + "/direct") },
		true, fmt.Sprintf(`plugin "guest": fetch: host %s not in allowed_hosts`, hostPort(t, forbidden)))
	if hits.Load() != 0 {
		t.Fatalf("the forbidden server got %d requests", hits.Load())
	}
	none := loadGuest(t, r, Permissions{}, nil)
	wantResult(t, callTool(t, none, "fetch", fmt.Sprintf(`{"url":%q}`, allowed.URL+"/ok")), true,
		fmt.Sprintf(`plugin "guest": fetch: host %s not in allowed_hosts`, hostPort(t, allowed)))
	wantResult(t, fetch(allowed.URL+"/ok"), false, "200 fine")
}

func TestHostileRedirectToDeniedHost(t *testing.T) {
	r := newTestRuntime(t)
	allowed, forbidden, hits := twoServers(t)
	// "localhost" is allowed; the redirect goes to 127.0.0.1 on another port.
	local := strings.Replace(allowed.URL, "127.0.0.1", "localhost", 1)
	p := loadGuest(t, r, Permissions{Timeout: 2 * time.Second, AllowedHosts: []string{"localhost"}}, nil)
	fetch := func(u string) CallResult { return callTool(t, p, "fetch", fmt.Sprintf(`{"url":%q}`, u)) }

	wantResult(t, fetch(local+"/ok"), false, "200 fine")
	misbehave(t, r, 2*time.Second, func() CallResult { return fetch(local + "/hop") },
		true, fmt.Sprintf(`plugin "guest": fetch: host %s not in allowed_hosts`, hostPort(t, forbidden)))
	if hits.Load() != 0 {
		t.Fatalf("the redirect reached the forbidden server (%d requests)", hits.Load())
	}
	wantResult(t, fetch(local+"/ok"), false, "200 fine")
}

// A module caught half-written (a build read mid-copy, a truncated download) is refused
// with an error at every length, through each ABI and with pre-initialisation: never a
// panic, never a plugin. Lengths: every section boundary's neighbourhood is reached by a
// stride through the whole file plus its first and last bytes one by one.
func TestHostileTruncatedModuleIsAnErrorAtEveryLength(t *testing.T) {
	r := newTestRuntime(t)
	wasm := fixtures.guest
	var cuts []int
	for n := 0; n < 64 && n < len(wasm); n++ {
		cuts = append(cuts, n, len(wasm)-1-n)
	}
	for n := 64; n < len(wasm); n += len(wasm) / 97 {
		cuts = append(cuts, n)
	}
	for _, cfg := range []Config{{ABI: ""}, {ABI: ABIExtism, Tools: []ToolDecl{{Name: "t"}}}, {Preinit: PreinitOn}, {Preinit: PreinitIfSafe}} {
		for _, n := range cuts {
			if n == 8 {
				continue // the header alone is a whole module, an empty one
			}
			cfg.Name, cfg.Wasm = fmt.Sprintf("cut-%d", n), wasm[:n]
			p, err := r.Load(context.Background(), cfg)
			if err == nil {
				p.Close(context.Background())
				t.Fatalf("abi %q preinit %v: a module cut at %d of %d bytes loaded", cfg.ABI, cfg.Preinit, n, len(wasm))
			}
		}
	}
}
