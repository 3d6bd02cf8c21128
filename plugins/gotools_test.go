package plugins

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sandbox"
)

func TestText(t *testing.T) {
	p := loadExample(t, "go/text", sandbox.Config{})
	wantTool(t, p, "word_count", `{"text":"one two  three\nfour\n"}`, false, `{"characters":20,"lines":2,"words":4}`)
	wantTool(t, p, "word_count", `{"text":""}`, false, `{"characters":0,"lines":0,"words":0}`)
	wantTool(t, p, "word_count", `{"text":"héllo wörld"}`, false, `{"characters":11,"lines":1,"words":2}`)
	wantTool(t, p, "regex_extract", `{"text":"a1 b22 c333","pattern":"[a-z](\\d+)"}`, false, `["a1","b22","c333"]`)
	wantTool(t, p, "regex_extract", `{"text":"a1 b22 c333","pattern":"[a-z](\\d+)","group":1}`, false, `["1","22","333"]`)
	wantTool(t, p, "regex_extract", `{"text":"none","pattern":"\\d"}`, false, `[]`)
	wantTool(t, p, "regex_extract", `{"text":"x","pattern":"("}`, true, "invalid pattern: error parsing regexp: missing closing ): `(`")
	wantTool(t, p, "regex_extract", `{"text":"x","pattern":"x","group":2}`, true, "group 2 out of range: the pattern has 0 groups")
	doc := quote(`{"items":[{"name":"a","tags":["x","y"]},{"name":"b"}],"n":null}`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":"items[0].tags[1]"}`, false, `"y"`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":"items.1"}`, false, `{"name":"b"}`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":""}`, false, `{"items":[{"name":"a","tags":["x","y"]},{"name":"b"}],"n":null}`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":"items[2]"}`, true, `$.items has 2 elements; index 2 is out of range`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":"items.x"}`, true, `$.items is an array; "x" is not an index`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":"missing"}`, true, `$ has no key "missing"`)
	wantTool(t, p, "json_query", `{"json":`+doc+`,"path":"items[1].name.first"}`, true, `$.items.1.name is not an object or array; cannot select "first"`)
	wantTool(t, p, "json_query", `{"json":"{","path":"a"}`, true, `invalid JSON: unexpected end of JSON input`)
	if got := len(p.Tools()); got != 3 {
		t.Fatalf("text has %d tools, want 3", got)
	}
}

func TestHTTPGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			fmt.Fprint(w, "hello from the test server")
		case "/big":
			fmt.Fprint(w, strings.Repeat("é", 10))
		default:
			http.Error(w, "nothing here", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	p := loadExample(t, "go/http_get", sandbox.Config{Permissions: sandbox.Permissions{
		Timeout: 5 * time.Second, AllowedHosts: []string{u.Host}}})
	wantTool(t, p, "http_get", `{"url":"`+srv.URL+`/hello"}`, false, "hello from the test server")
	wantTool(t, p, "http_get", `{"url":"`+srv.URL+`/big","max_bytes":5}`, false, "éé\n[truncated: 4 of 20 bytes]")
	wantTool(t, p, "http_get", `{"url":"`+srv.URL+`/missing"}`, true, "GET "+srv.URL+"/missing: status 404: nothing here\n")
	wantTool(t, p, "http_get", `{"url":""}`, true, "url is required")

	denied := loadExample(t, "go/http_get", sandbox.Config{Name: "denied"})
	wantTool(t, denied, "http_get", `{"url":"`+srv.URL+`/hello"}`, true,
		`plugin "denied": call: host `+u.Host+` not in allowed_hosts`)
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "a.md"), []byte("# A"), 0o644))
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")))

	p := loadExample(t, "go/files", sandbox.Config{Permissions: sandbox.Permissions{
		AllowedPaths: map[string]string{"ro:" + dir: "/data"}}})
	wantTool(t, p, "read_file", `{"path":"/data/notes.txt"}`, false, "buy milk\n")
	wantTool(t, p, "read_file", `{"path":"/data/sub/a.md"}`, false, "# A")
	wantTool(t, p, "list_dir", `{"path":"/data"}`, false, "link\nnotes.txt\nsub/")
	wantTool(t, p, "list_dir", `{"path":"/data/sub"}`, false, "a.md")
	wantTool(t, p, "read_file", `{"path":"/data/sub"}`, true, "read_file: /data/sub is a directory")
	// File errors end with what the plugin may reach (the sandbox's note).
	note := ` (plugin "files" reaches only its allowed_paths: ` + dir + ` at /data (read-only))`
	wantTool(t, p, "read_file", `{"path":"/data/none.txt"}`, true, "read_file: stat /data/none.txt: No such file or directory"+note)
	// Outside the mount, by "..", by an absolute path or by a symlink: refused.
	wantTool(t, p, "read_file", `{"path":"/data/../etc/passwd"}`, true, "read_file: stat /data/../etc/passwd: Bad file number"+note)
	wantTool(t, p, "read_file", `{"path":"`+filepath.Join(outside, "secret")+`"}`, true, "read_file: stat "+filepath.Join(outside, "secret")+": Bad file number"+note)
	res := wantFailure(t, p, "read_file", `{"path":"/data/link"}`)
	if strings.Contains(res, "s3cret") {
		t.Fatalf("symlink escape: %q", res)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
