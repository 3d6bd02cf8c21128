package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audit"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

// Through the binary, on SQLite and on PostgreSQL: the log begins with its genesis record;
// `audit checkpoint` exports an anchor; a cut tail passes `audit verify` alone but not
// `--checkpoint`; a deleted middle, a renumbering and a deleted head are each named; a log
// without a genesis record is refused unless --legacy accepts it, and a checkpoint still
// tells it is not the log checkpointed.
func TestE2E_AuditVerifyFindsADeletedHeadMiddleRenumberingAndACutTail(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
			var tamper func(stmt string)
			if kind == "postgres" {
				url := usePostgres(t, e)
				tamper = func(stmt string) {
					conn, err := pgx.Connect(context.Background(), url)
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close(context.Background())
					if _, err := conn.Exec(context.Background(), stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
			} else {
				tamper = func(stmt string) {
					db, err := sql.Open("sqlite", filepath.Join(e.dir, "sessions.db"))
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if _, err := db.Exec(stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
			}
			auditAttacks(t, e, tamper)
		})
	}
}

func auditAttacks(t *testing.T, e *agentEnv, tamper func(stmt string)) {
	// plugins list loads the configuration and records it (config.load, record 2); users
	// add opens the store alone and records only the addition.
	if r := e.agenthost(t, "plugins", "list"); r.code != 0 {
		t.Fatalf("plugins list: %d %s", r.code, r.stderr)
	}
	for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
		if r := e.agenthost(t, "users", "add", u, "--role", "user"); r.code != 0 {
			t.Fatalf("users add: %d %s", r.code, r.stderr)
		}
	}
	var recs []audit.Record
	if r := e.agenthost(t, "audit", "list", "--json"); json.Unmarshal([]byte(r.stdout), &recs) != nil || len(recs) != 7 || recs[0].Action != audit.ActionGenesis {
		t.Fatalf("audit list: %s %s", r.stdout, r.stderr)
	}
	r := e.agenthost(t, "audit", "checkpoint")
	var cp audit.Checkpoint
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &cp) != nil || cp.Records != 7 || cp.Head != recs[6].Hash || cp.Log != recs[0].Hash {
		t.Fatalf("audit checkpoint: %d %s %s", r.code, r.stdout, r.stderr)
	}
	cpFile := filepath.Join(t.TempDir(), "cp.json")
	if err := os.WriteFile(cpFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "7 records, chain intact from its genesis record; last hash " + recs[6].Hash + "\ncheckpoint holds: records 1 to 7 are those checkpointed (last hash " + recs[6].Hash + ")\n"
	if r := e.agenthost(t, "audit", "verify", "--checkpoint", cpFile); r.code != 0 || r.stdout != want {
		t.Fatalf("verify --checkpoint: %d %q %s", r.code, r.stdout, r.stderr)
	}
	expect := func(step string, code int, stdout, stderr string, args ...string) {
		t.Helper()
		r := e.agenthost(t, args...)
		if r.code != code || !strings.Contains(r.stdout, stdout) || !strings.Contains(r.stderr, stderr) {
			t.Fatalf("%s: %v: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", step, args, r.code, r.stdout, r.stderr, code, stdout, stderr)
		}
	}
	// A cut tail: the rest verifies alone; the checkpoint finds it.
	tamper(`DELETE FROM audit WHERE seq > 5`)
	expect("cut tail", 0, "5 records, chain intact from its genesis record", "", "audit", "verify")
	expect("cut tail", 1, "", "the audit log holds 5 records, the checkpoint 7: records 6 to 7 were deleted (the tail was cut)", "audit", "verify", "--checkpoint", cpFile)
	// A deleted middle, then renumbered to close the gap.
	tamper(`DELETE FROM audit WHERE seq = 3`)
	expect("deleted middle", 1, "", "audit record 4 follows 2: 1 records are missing", "audit", "verify")
	tamper(`UPDATE audit SET seq = -seq WHERE seq > 3`)
	tamper(`UPDATE audit SET seq = -seq - 1 WHERE seq < 0`)
	expect("renumbered", 1, "", "audit record 3 does not follow record 2", "audit", "verify")
	// A deleted head; and no checkpoint is exported of a broken log.
	tamper(`DELETE FROM audit WHERE seq = 1`)
	expect("deleted head", 1, "", "the audit log begins at record 2: records 1 to 1 were deleted", "audit", "verify")
	if r := e.agenthost(t, "audit", "checkpoint"); r.code != 1 || r.stdout != "" {
		t.Fatalf("a checkpoint of a broken log: %d %q", r.code, r.stdout)
	}
	// Every record deleted: the store does not begin the log again; what is appended
	// then has no genesis record, and only --legacy accepts it.
	tamper(`DELETE FROM audit`)
	expect("wiped", 1, "", "the audit log is empty", "audit", "verify")
	if r := e.agenthost(t, "users", "add", "u6", "--role", "user"); r.code != 0 {
		t.Fatalf("users add: %d %s", r.code, r.stderr)
	}
	expect("no genesis", 1, "", `the audit log has no genesis record: record 1 is a "user.add" record`, "audit", "verify")
	expect("legacy", 0, "1 records, chain intact from record 1 (a legacy log: no genesis record)", "", "audit", "verify", "--legacy")
	expect("legacy, checkpoint", 1, "", "the audit log is not the one checkpointed", "audit", "verify", "--legacy", "--checkpoint", cpFile)
	// A file that is not a checkpoint is a usage error.
	if err := os.WriteFile(cpFile, []byte(`{"format": "other"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	expect("not a checkpoint", 2, "", "not a checkpoint", "audit", "verify", "--checkpoint", cpFile)
}
