package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/audit"
	"github.com/agenthost/agenthost/loop"
)

// openSQLiteHost opens a host on a SQLite store (which keeps owners and the audit log)
// with the scripted provider answering every run "ok" and the calc plugin.
func openDoorHost(t *testing.T) *Host {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"repeat": true, "turns": [{"text": "ok"}]}`), 0o644)
	m := fmt.Sprintf("[agent]\nprovider = \"scripted\"\nmodel = \"m1\"\n[providers.scripted]\ncommand = %q\n"+
		"options = { script = \"script.json\" }\n[store]\nkind = \"sqlite\"\npath = \"s.db\"\n%s", scriptedBin, calcPlugin("calc"))
	p := filepath.Join(dir, "agent.toml")
	os.WriteFile(p, []byte(m), 0o644)
	h, err := Open(context.Background(), Options{Manifest: p, CacheDir: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// The door decides for every entrance alike: a run (Door.Run, what HTTP, A2A, the CLI
// and workflow prompt steps take) and a tool call outside a run (Door.CallTool: mcp
// serve, plugins call, workflow tool steps) on ana's session are refused to bo with the
// answer that does not tell it exists, to a viewer as not allowed, and to a user naming
// someone else; ana's own entries are audited with her id.
func TestTheDoorAuthorisesEveryEntranceAlike(t *testing.T) {
	h := openDoorHost(t)
	ctx := context.Background()
	ana := access.Principal{ID: "u-ana", Name: "ana", Role: access.RoleUser}
	bo := access.Principal{ID: "u-bo", Name: "bo", Role: access.RoleUser}
	viewer := access.Principal{ID: "u-vi", Name: "vi", Role: access.RoleViewer}
	d := h.Door()
	entrances := map[string]func(p access.Principal, session, user string) error{
		"Run": func(p access.Principal, session, user string) error {
			_, err := d.Run(ctx, p, loop.RunInput{SessionID: session, User: user, Messages: []loop.Message{loop.UserMessage("hi")}}, nil)
			return err
		},
		"CallTool": func(p access.Principal, session, user string) error {
			if user != "" {
				return nil // a tool call names no other user: the principal is whom it is for
			}
			out, res := d.CallTool(ctx, p, "calc", []byte(`{"expression":"6*7"}`), CallOptions{SessionID: session})
			if res.Status != loop.StatusCompleted {
				return res.Err
			}
			if out.Text() != "42" {
				return fmt.Errorf("result %q", out.Text())
			}
			return nil
		},
	}
	for name, enter := range entrances {
		t.Run(name, func(t *testing.T) {
			session := "s-ana-" + name
			if err := enter(ana, session, ""); err != nil {
				t.Fatalf("ana on her new session: %v", err)
			}
			for _, c := range []struct {
				who  access.Principal
				user string
				want error
			}{{bo, "", access.ErrNotVisible}, {viewer, "", access.ErrNotAllowed}, {bo, "ana", access.ErrNotAllowed}} {
				if c.user != "" && name == "CallTool" {
					continue
				}
				if err := enter(c.who, session, c.user); !errors.Is(err, c.want) {
					t.Errorf("%s (%s) as %q on ana's session: %v, want %v", c.who.Name, c.who.Role, c.user, err, c.want)
				}
			}
			recs, err := h.Store.(audit.Store).Audit(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var hers int
			for _, r := range recs {
				if r.Action == audit.ActionRunStart && strings.HasPrefix(r.Target, session+"/") {
					hers++
					if r.Actor != "u-ana" || r.Detail["actor_id"] != "u-ana" || r.Detail["actor_role"] != "user" {
						t.Errorf("run.start on her session: actor %q detail %v", r.Actor, r.Detail)
					}
				}
			}
			if hers != 1 {
				t.Errorf("%d run starts on ana's session, want hers alone (refusals start nothing)", hers)
			}
		})
	}
}
