package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// zipNames is the sorted entry names of a zip archive, and the bytes of the one whose
// name ends in cases.jsonl.
func zipNames(t *testing.T, body string) ([]string, []byte) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader([]byte(body)), int64(len(body)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	var names []string
	var cases []byte
	for _, f := range zr.File {
		names = append(names, f.Name)
		if strings.HasSuffix(f.Name, "/cases.jsonl") {
			rc, _ := f.Open()
			cases, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	sort.Strings(names)
	return names, cases
}

// "Save as test case" over HTTP goes through the door: the owner gets her session's
// last run as a zip of the replay fixture, under a folder named by the case; another
// user, or a viewer, gets for her session what a session that does not exist gets (404,
// the same words); a case id that is not a plain name is refused, and a session id
// that is not one is made one for the folder (no path in the archive leaves it); a
// session with no finished run is 409 with the reason.
func TestE2E_SaveAsTestCaseIsTheOwnersAndAForeignSessionIsNotFound(t *testing.T) {
	s, tok := usersEnv(t)
	ana, bo, vi := tok["ana"], tok["bo"], tok["vi"]
	odd := `../x "y"`
	for _, id := range []string{"t1", odd} {
		thread, _ := json.Marshal(id)
		if code, body := call(t, s, ana, "POST", "/v1/runs", strings.Replace(runBody("T", "r1", "hi"), `"T"`, string(thread), 1)); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
			t.Fatalf("ana's run on %q: %d %s", id, code, body)
		}
	}
	for _, who := range []struct{ name, token, session string }{{"bo", bo, "t1"}, {"vi", vi, "t1"}, {"bo", bo, "nope"}, {"ana", ana, "nope"}} {
		code, body := call(t, s, who.token, "GET", "/v1/sessions/"+who.session+"/fixture", "")
		if code != 404 || strings.TrimSpace(body) != `{"error":"no session \"`+who.session+`\""}` {
			t.Fatalf("%s saves %s: %d %s", who.name, who.session, code, body)
		}
	}

	req, _ := http.NewRequest("GET", s.base+"/v1/sessions/t1/fixture", nil)
	req.Header.Set("Authorization", "Bearer "+ana)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" || resp.Header.Get("Content-Disposition") != `attachment; filename="t1.zip"` {
		t.Fatalf("ana saves t1: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	names, cases := zipNames(t, string(b))
	var c struct {
		ID    string `json:"id"`
		Input struct {
			Prompt string `json:"prompt"`
		} `json:"input"`
	}
	if strings.Join(names, " ") != "t1/cases.jsonl t1/model.json t1/tools.json" || json.Unmarshal(cases, &c) != nil || c.ID != "t1" || c.Input.Prompt != "hi" {
		t.Fatalf("t1's archive: %v %s", names, cases)
	}

	code, body := call(t, s, ana, "GET", "/v1/sessions/t1/fixture?id=greeting", "")
	if names, cases := zipNames(t, body); code != 200 || strings.Join(names, " ") != "greeting/cases.jsonl greeting/model.json greeting/tools.json" || !strings.HasPrefix(string(cases), `{"id":"greeting"`) {
		t.Fatalf("saved as greeting: %d %v %s", code, names, cases)
	}
	for _, id := range []string{"../up", ".hidden", "a/b", strings.Repeat("x", 129)} {
		if code, body := call(t, s, ana, "GET", "/v1/sessions/t1/fixture?id="+url.QueryEscape(id), ""); code != 400 || !strings.Contains(body, "a case id is letters, digits") {
			t.Fatalf("case id %q: %d %s", id, code, body)
		}
	}
	code, body = call(t, s, ana, "GET", "/v1/sessions/"+url.PathEscape(odd)+"/fixture", "")
	if names, cases := zipNames(t, body); code != 200 || strings.Join(names, " ") != "_._x__y_/cases.jsonl _._x__y_/model.json _._x__y_/tools.json" || !strings.Contains(string(cases), `"id":"../x \"y\""`) {
		t.Fatalf("a session id that is no plain name: %d %v %s", code, names, cases)
	}

	// A fork that dropped the only turn has no run to record.
	_, body = call(t, s, ana, "GET", "/v1/sessions/t1", "")
	var detail struct{ Entries []loop.Entry }
	at := int64(0)
	if json.Unmarshal([]byte(body), &detail) == nil {
		for _, e := range detail.Entries {
			if e.Kind == loop.EntryMessage && e.Message.Role == loop.RoleUser {
				at = e.Seq
			}
		}
	}
	code, body = call(t, s, ana, "POST", "/v1/sessions/t1/fork", `{"at": `+strconv.FormatInt(at, 10)+`, "edits": [{"op": "drop_last_turn"}]}`)
	var made struct{ Session string }
	if code != 201 || json.Unmarshal([]byte(body), &made) != nil {
		t.Fatalf("fork: %d %s", code, body)
	}
	if code, body := call(t, s, ana, "GET", "/v1/sessions/"+made.Session+"/fixture", ""); code != 409 || strings.TrimSpace(body) != `{"error":"no such run to record: the session has no finished run"}` {
		t.Fatalf("a session with no finished run: %d %s", code, body)
	}
}
