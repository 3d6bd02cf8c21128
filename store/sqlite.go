package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// SQLite is a loop.SessionStore in one SQLite file. It is safe for concurrent use.
//
// Every write of this process goes through one connection and is group-committed
// (sqlitewrite.go): concurrent appends share a transaction, and each caller returns
// once the transaction holding its write is committed. busy_timeout is left for writers
// in other processes.
type SQLite struct {
	db     *sql.DB
	point  *pointReads // a run's start reads, on connections that do not map the file (pointreads.go)
	path   string
	w      *writer
	watch  *fileWatch    // is path still the file we write? (unavailable.go)
	keys   *seal.Keys    // nil: nothing is sealed (seal.go)
	reads  stmtCache     // the reads' statements, prepared once (sqlitetx.go)
	mixed  bool          // keyed, but plain values from before may remain (seal.go)
	race   func(string)  // tests: runs between Reseal's read of a batch and its writes
	heads  *HeadCache    // the heads last loaded (sqlitehead.go)
	index  *IndexBuilder // builds the vector indexes searches ask for (vectorindex.go)
	icache IndexCache    // their centroids, decoded
	// cacheBounds bound the tool-result cache (toolcache.go); zero: the defaults.
	cacheBounds CacheBounds
}

var (
	_ loop.SessionStore  = (*SQLite)(nil)
	_ loop.Leaser        = (*SQLite)(nil)
	_ loop.SessionLister = (*SQLite)(nil)
	_ loop.RunAppender   = (*SQLite)(nil)
)

// OpenSQLite opens (creating if needed) the store at path, and its directory, and
// migrates its schema to the current version (see migrate.go). Every error names the
// file: a corrupt or unreadable file is an error here, not later.
func OpenSQLite(path string) (*SQLite, error) {
	return OpenSQLiteWith(path, Options{})
}

// Options are what a store is opened with besides where it is.
type Options struct {
	// Keys, when set, seals entry bodies, plugin values and memories at rest (store/seal);
	// values written before are still read, and `rotate-key` (Reseal) seals them.
	Keys *seal.Keys
}

// OpenSQLiteWith is OpenSQLite with options.
func OpenSQLiteWith(path string, o Options) (*SQLite, error) {
	s, err := openSQLite(path)
	if err != nil {
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	if err := s.useKeys(context.Background(), o.Keys); err != nil {
		s.Close()
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	return s, nil
}

func openSQLite(path string) (*SQLite, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, errors.New("is a directory, not a database file")
	} else if err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	// SQLite opens a file it cannot read as an empty read-only database, and root reads
	// anything: open it ourselves first, so "permission denied" is what the user sees.
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := checkNotTruncated(path); err != nil {
		return nil, err
	}
	// WAL lets readers (sessions list) run beside the writer; NORMAL sync in WAL mode
	// survives a killed process (not a power cut), which is the promise here. The WAL is
	// checkpointed at 4,000 pages (16 MiB), not SQLite's 1,000: a checkpoint's fsyncs were
	// 7% of a one-step run's CPU, and a page rewritten between two is copied once.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_pragma=secure_delete(ON)&_pragma=wal_autocheckpoint(4000)" + mmapPragma + "&_txlock=immediate"
	if err := registerCosine(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	w, err := newWriter(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	watch, err := newFileWatch(path, slog.Default())
	if err != nil {
		w.close()
		db.Close()
		return nil, err
	}
	w.check = watch.check
	point, err := openPointReads(strings.Replace(dsn, mmapPragma, "", 1), w)
	if err != nil {
		w.close()
		db.Close()
		return nil, err
	}
	s := &SQLite{db: db, point: point, path: path, w: w, watch: watch, heads: NewHeadCache(HeadCacheEntries)}
	s.index = newIndexBuilder(s)
	return s, nil
}

// SetLogger sends the store's own reports (the database file deleted or replaced under
// the process) to l instead of slog.Default().
func (s *SQLite) SetLogger(l *slog.Logger) {
	s.watch.mu.Lock()
	s.watch.log = l
	s.watch.mu.Unlock()
}

// Path is the database file.
func (s *SQLite) Path() string { return s.path }

// Close closes the database. It is safe on a nil *SQLite, which a failed open returns.
func (s *SQLite) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	s.index.Close()
	werr := s.w.close()
	s.reads.close()
	s.point.close()
	if err := s.db.Close(); err != nil {
		return err
	}
	return werr
}

// Append stores entries in one transaction. The first entry's Seq must follow the last
// stored one and the batch must be gapless.
func (s *SQLite) Append(ctx context.Context, session string, entries ...loop.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	es, err := encodeEntries(s.keys, session, entries)
	if err == nil {
		err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error { return s.w.appendTx(ctx, tx, session, es) })
	}
	if err != nil {
		return appendError(session, err)
	}
	return nil
}

// AppendRun implements loop.RunAppender: the run record and the entries of its session
// in one transaction, and with a final record the run's lease released.
func (s *SQLite) AppendRun(ctx context.Context, r loop.RunRecord, entries ...loop.Entry) error {
	return s.appendRun(ctx, r, nil, entries, nil)
}

// Load returns every entry of a session in order.
func (s *SQLite) Load(ctx context.Context, session string) ([]loop.Entry, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("load session %q: %w", session, err)
	}
	rows, err := s.query(ctx, `SELECT seq, body FROM entries WHERE sid = `+sidOf+` ORDER BY seq`, session)
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
		if body, err = s.keys.Open(body, seal.EntryAAD(session, seq)); err != nil {
			return nil, fmt.Errorf("load session %q: entry %d: %w", session, seq, err)
		}
		e, err := decodeEntry(seq, body)
		if err != nil {
			return nil, fmt.Errorf("load session %q: %w", session, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load session %q: %w", session, err)
	}
	return out, nil
}

// SaveRun inserts or updates a run's summary row, keyed by (session, run id).
func (s *SQLite) SaveRun(ctx context.Context, r loop.RunRecord) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := s.w.saveRunTx(ctx, tx, r, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("save run %q: %w", r.ID, err)
	}
	return nil
}

// Runs lists a session's runs in the order they started.
func (s *SQLite) Runs(ctx context.Context, session string) ([]loop.RunRecord, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("runs of session %q: %w", session, err)
	}
	rows, err := s.query(ctx, `SELECT id, session, status, reason, started, ended, usage, note FROM runs WHERE sid = `+sidOf+` ORDER BY started, id`, session)
	if err != nil {
		return nil, fmt.Errorf("runs of session %q: %w", session, err)
	}
	defer rows.Close()
	var out []loop.RunRecord
	for rows.Next() {
		var r loop.RunRecord
		var status, reason, started, ended, usage string
		var note []byte
		if err := rows.Scan(&r.ID, &r.SessionID, &status, &reason, &started, &ended, &usage, &note); err != nil {
			return nil, fmt.Errorf("runs of session %q: %w", session, err)
		}
		var err error
		if r.Note, err = s.openNote(note, r.SessionID, r.ID); err != nil {
			return nil, fmt.Errorf("runs of session %q: run %q note: %w", session, r.ID, err)
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
type SessionInfo = loop.SessionInfo

// DeleteSession removes a session's entries and runs in one transaction; a session whose
// run holds a lease (running now, in this process or another) is refused. It answers
// once their bytes are gone from the database and its -wal file (erase.go).
func (s *SQLite) DeleteSession(ctx context.Context, session string) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var held int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM leases WHERE session = ?`, session).Scan(&held); err != nil {
			return err
		}
		if held > 0 {
			return loop.ErrSessionBusy
		}
		for _, q := range []string{`DELETE FROM entries WHERE sid = ` + sidOf, `DELETE FROM runs WHERE sid = ` + sidOf, `DELETE FROM session_keys WHERE id = ?`, `DELETE FROM feedback WHERE session = ?`,
			`DELETE FROM attachments WHERE session = ?`, `DELETE FROM session_owners WHERE session = ?`, `DELETE FROM shares WHERE session = ?`, `DELETE FROM tool_cache WHERE session = ?`} {
			if _, err := tx.ExecContext(ctx, q, session); err != nil {
				return err
			}
		}
		return nil
	})
	s.heads.Drop(session) // after the rows: a load meanwhile may have kept them
	if err == nil {
		err = s.scrub(ctx) // erase.go: the -wal file still holds the session's pages
	}
	if err != nil {
		return fmt.Errorf("delete session %q: %w", session, err)
	}
	return nil
}

// KVGet reads a plugin's value.
func (s *SQLite) KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	if err := s.watch.check(); err != nil {
		return nil, false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
	}
	var v []byte
	err := s.queryRow(ctx, `SELECT value FROM kv WHERE plugin = ? AND key = ?`, plugin, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
	}
	if s.keys != nil {
		if v, err = s.keys.Open(v, seal.KVAAD(plugin, key)); err != nil {
			return nil, false, fmt.Errorf("kv get %s/%s: %w", plugin, key, err)
		}
	}
	return v, true, nil
}

// KVSet writes a plugin's value.
func (s *SQLite) KVSet(ctx context.Context, plugin, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	value = s.keys.Seal(value, seal.KVAAD(plugin, key))
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, qKVSet, plugin, key, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("kv set %s/%s: %w", plugin, key, err)
	}
	return nil
}

// KVKeys lists a plugin's keys that start with prefix, sorted (loop.KVLister); limit < 0
// is no limit.
func (s *SQLite) KVKeys(ctx context.Context, plugin, prefix string, limit int) ([]string, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("kv keys %s: %w", plugin, err)
	}
	// instr, not LIKE: a prefix holding % or _ means itself.
	rows, err := s.query(ctx, `SELECT key FROM kv WHERE plugin = ? AND (? = '' OR instr(key, ?) = 1) ORDER BY key LIMIT ?`, plugin, prefix, prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("kv keys %s: %w", plugin, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("kv keys %s: %w", plugin, err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// KVDelete removes a plugin's value.
func (s *SQLite) KVDelete(ctx context.Context, plugin, key string) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE plugin = ? AND key = ?`, plugin, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("kv delete %s/%s: %w", plugin, key, err)
	}
	return nil
}

// timeText is the text of every time a column keeps (runs' start and end, entries'
// times, leases' heartbeats, feedback, memories, audit, access): fixed width, so that
// the column's text order, which ORDER BY and MAX() use, is time order. RFC 3339 with
// nanoseconds drops trailing zeros, so "…:00.55Z" sorted before "…:00.5Z": runs and
// entries were written so until schema 19 (those rows keep it; parseTime reads both).
const timeText = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeText)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// decodeEntry decodes a stored entry body and checks it against its row: the body's
// seq must be the row's, and the payload must match the kind, so code reading a loaded
// entry can trust e.Message / e.Event / e.Compaction for its kind.
func decodeEntry(seq int64, body []byte) (loop.Entry, error) {
	var e loop.Entry
	if err := unmarshalEntry(body, &e); err != nil {
		return loop.Entry{}, fmt.Errorf("entry %d: %w", seq, err)
	}
	if e.Seq != seq {
		return loop.Entry{}, fmt.Errorf("entry %d: body says seq %d", seq, e.Seq)
	}
	var ok bool
	switch e.Kind {
	case loop.EntryMessage:
		ok = e.Message != nil
	case loop.EntryCompaction:
		ok = e.Compaction != nil
	case loop.EntryEvent:
		ok = e.Event != nil
	}
	if !ok {
		return loop.Entry{}, fmt.Errorf("entry %d: kind %q without its payload", seq, e.Kind)
	}
	return e, nil
}
