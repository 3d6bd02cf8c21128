package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const schema = `
CREATE TABLE IF NOT EXISTS entries (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	run_id  TEXT    NOT NULL,
	time    TEXT    NOT NULL,
	kind    TEXT    NOT NULL,
	body    BLOB    NOT NULL,
	PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
	id      TEXT PRIMARY KEY,
	session TEXT NOT NULL,
	status  TEXT NOT NULL,
	reason  TEXT NOT NULL,
	started TEXT NOT NULL,
	ended   TEXT NOT NULL,
	usage   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session, started);
CREATE TABLE IF NOT EXISTS kv (
	plugin TEXT NOT NULL,
	key    TEXT NOT NULL,
	value  BLOB NOT NULL,
	PRIMARY KEY (plugin, key)
) WITHOUT ROWID;
`

// SQLite is a loop.SessionStore in one SQLite file. It is safe for concurrent use.
//
// Writes from this process take turns on a mutex before they reach SQLite: SQLite admits
// one writer at a time and makes the others wait in its busy handler, which sleeps in
// growing steps (up to 100 ms) before it tries again. A Go mutex hands over at once;
// busy_timeout is left for writers in other processes.
type SQLite struct {
	db   *sql.DB
	path string
	wmu  sync.Mutex // serialises this process's write transactions
}

var _ loop.SessionStore = (*SQLite)(nil)

// OpenSQLite opens (creating if needed) the store at path, and its directory.
func OpenSQLite(path string) (*SQLite, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	// WAL lets readers (sessions list) run beside the writer; NORMAL sync in WAL mode
	// survives a killed process (not a power cut), which is the promise here.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &SQLite{db: db, path: path}, nil
}

// Path is the database file.
func (s *SQLite) Path() string { return s.path }

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

// Append stores entries in one transaction. The first entry's Seq must follow the last
// stored one and the batch must be gapless.
func (s *SQLite) Append(ctx context.Context, session string, entries ...loop.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", session, err)
	}
	defer tx.Rollback()
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM entries WHERE session = ?`, session).Scan(&last); err != nil {
		return fmt.Errorf("append to session %q: %w", session, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO entries (session, seq, run_id, time, kind, body) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", session, err)
	}
	defer stmt.Close()
	for i, e := range entries {
		if want := last + int64(i) + 1; e.Seq != want {
			return fmt.Errorf("session %q: append seq %d, want %d (another run writing?)", session, e.Seq, want)
		}
		body, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("append to session %q: entry %d: %w", session, e.Seq, err)
		}
		if _, err := stmt.ExecContext(ctx, session, e.Seq, e.RunID, e.Time.UTC().Format(time.RFC3339Nano), string(e.Kind), body); err != nil {
			return fmt.Errorf("append to session %q: entry %d: %w", session, e.Seq, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("append to session %q: %w", session, err)
	}
	return nil
}

// Load returns every entry of a session in order.
func (s *SQLite) Load(ctx context.Context, session string) ([]loop.Entry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, body FROM entries WHERE session = ? ORDER BY seq`, session)
	if err != nil {
		return nil, fmt.Errorf("load session %q: %w", session, err)
	}
	defer rows.Close()
	var out []loop.Entry
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return nil, fmt.Errorf("load session %q: %w", session, err)
		}
		var e loop.Entry
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("load session %q: entry %d: %w", session, seq, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load session %q: %w", session, err)
	}
	return out, nil
}

// SaveRun inserts or updates a run's summary row.
func (s *SQLite) SaveRun(ctx context.Context, r loop.RunRecord) error {
	usage, _ := json.Marshal(r.Usage)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, session, status, reason, started, ended, usage) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, reason = excluded.reason, ended = excluded.ended, usage = excluded.usage`,
		r.ID, r.SessionID, string(r.Status), string(r.Reason), formatTime(r.Started), formatTime(r.Ended), string(usage))
	if err != nil {
		return fmt.Errorf("save run %q: %w", r.ID, err)
	}
	return nil
}

// Runs lists a session's runs in the order they started.
func (s *SQLite) Runs(ctx context.Context, session string) ([]loop.RunRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, session, status, reason, started, ended, usage FROM runs WHERE session = ? ORDER BY started, id`, session)
	if err != nil {
		return nil, fmt.Errorf("runs of session %q: %w", session, err)
	}
	defer rows.Close()
	var out []loop.RunRecord
	for rows.Next() {
		var r loop.RunRecord
		var status, reason, started, ended, usage string
		if err := rows.Scan(&r.ID, &r.SessionID, &status, &reason, &started, &ended, &usage); err != nil {
			return nil, fmt.Errorf("runs of session %q: %w", session, err)
		}
		r.Status, r.Reason = loop.Status(status), loop.Reason(reason)
		r.Started, r.Ended = parseTime(started), parseTime(ended)
		if err := json.Unmarshal([]byte(usage), &r.Usage); err != nil {
			return nil, fmt.Errorf("runs of session %q: run %q usage: %w", session, r.ID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SessionInfo summarises a stored session.
type SessionInfo struct {
	ID      string    `json:"id"`
	Entries int64     `json:"entries"`
	Runs    int64     `json:"runs"`
	Updated time.Time `json:"updated"`
}

// Sessions lists stored sessions, most recently updated first.
func (s *SQLite) Sessions(ctx context.Context) ([]SessionInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT e.session, COUNT(*), MAX(e.time),
		(SELECT COUNT(*) FROM runs r WHERE r.session = e.session)
		FROM entries e GROUP BY e.session ORDER BY MAX(e.time) DESC, e.session`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionInfo
	for rows.Next() {
		var si SessionInfo
		var updated string
		if err := rows.Scan(&si.ID, &si.Entries, &updated, &si.Runs); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		si.Updated = parseTime(updated)
		out = append(out, si)
	}
	return out, rows.Err()
}

// KVGet reads a plugin's value.
func (s *SQLite) KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	var v []byte
	err := s.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE plugin = ? AND key = ?`, plugin, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
	}
	return v, true, nil
}

// KVSet writes a plugin's value.
func (s *SQLite) KVSet(ctx context.Context, plugin, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.ExecContext(ctx, `INSERT INTO kv (plugin, key, value) VALUES (?, ?, ?)
		ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`, plugin, key, value)
	if err != nil {
		return fmt.Errorf("kv set %s/%s: %w", plugin, key, err)
	}
	return nil
}

// KVDelete removes a plugin's value.
func (s *SQLite) KVDelete(ctx context.Context, plugin, key string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM kv WHERE plugin = ? AND key = ?`, plugin, key); err != nil {
		return fmt.Errorf("kv delete %s/%s: %w", plugin, key, err)
	}
	return nil
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
