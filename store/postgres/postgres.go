package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/seal"
)

// Store is the PostgreSQL session store. It is safe for concurrent use.
type Store struct {
	db     *db                 // every statement goes through it (door.go)
	watch  watchers            // watch.go
	keys   *seal.Keys          // nil: nothing is sealed (seal.go)
	mixed  bool                // keyed, but plain values from before may remain
	race   func(string)        // tests: runs between Reseal's read of a batch and its writes
	log    *slog.Logger        // the store's own reports (nil: slog.Default())
	heads  *store.HeadCache    // the heads last loaded (head.go)
	index  *store.IndexBuilder // builds the vector indexes searches ask for (memoryindex.go)
	icache store.IndexCache    // their centroids, decoded
	// cacheBounds bound the tool-result cache (toolcache.go); zero: the defaults.
	cacheBounds store.CacheBounds
}

var (
	_ loop.SessionStore   = (*Store)(nil)
	_ loop.Leaser         = (*Store)(nil)
	_ loop.RunAppender    = (*Store)(nil)
	_ loop.SessionLister  = (*Store)(nil)
	_ loop.SessionDeleter = (*Store)(nil)
)

// Open connects to url (postgres://…) and migrates the schema (migrate.go). Errors
// name the server, never the password.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenWith(ctx, url, Options{})
}

// Options are what a store is opened with besides where it is.
type Options struct {
	// Keys, when set, seals entry bodies, plugin values and memories at rest (store/seal),
	// as the SQLite store does.
	Keys *seal.Keys
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, url string, o Options) (*Store, error) {
	d, where, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, d); err != nil {
		d.Close()
		return nil, fmt.Errorf("postgres store %s: %w", where, err)
	}
	s := &Store{db: d, heads: store.NewHeadCache(store.HeadCacheEntries)}
	s.index = newIndexBuilder(s)
	if err := s.useKeys(ctx, o.Keys); err != nil {
		d.Close()
		return nil, fmt.Errorf("postgres store %s: %w", where, err)
	}
	return s, nil
}

// Close closes the connections. It is safe on a nil *Store.
func (s *Store) Close() error {
	if s != nil && s.db != nil {
		s.index.Close()
		s.watch.mu.Lock()
		if s.watch.cancel != nil {
			s.watch.cancel()
		}
		s.watch.mu.Unlock()
		s.db.Close()
	}
	return nil
}

// lockSession takes the session's advisory lock for the rest of tx.
func lockSession(ctx context.Context, tx pgx.Tx, session string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, session)
	return err
}

// Append stores entries in one transaction. The first entry's Seq must follow the last
// stored one and the batch must be gapless.
func (s *Store) Append(ctx context.Context, session string, entries ...loop.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error { return appendTx(ctx, tx, s.keys, session, entries) })
	if err != nil {
		return fmt.Errorf("append to session %q: %w", session, err)
	}
	return nil
}

// AppendRun implements loop.RunAppender: the run record and the entries of its session
// in one transaction, and with a final record the run's lease released.
func (s *Store) AppendRun(ctx context.Context, r loop.RunRecord, entries ...loop.Entry) error {
	return s.appendRun(ctx, r, nil, entries)
}

// AppendRunKV implements loop.KVRunAppender: AppendRun, with kv set in the same
// transaction (a workflow step's end with its call's end: a crash cannot store the
// call's result without it, so a resume does not make the call again).
func (s *Store) AppendRunKV(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, entries ...loop.Entry) error {
	return s.appendRun(ctx, r, kv, entries)
}

var _ loop.KVRunAppender = (*Store)(nil)

func (s *Store) appendRun(ctx context.Context, r loop.RunRecord, kv []loop.KVWrite, entries []loop.Entry) error {
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, r.SessionID); err != nil {
			return err
		}
		if err := fenceTx(ctx, tx, r.SessionID); err != nil {
			return err
		}
		if err := saveRun(ctx, tx, r); err != nil {
			return fmt.Errorf("save run %q: %w", r.ID, err)
		}
		if len(entries) > 0 {
			if err := appendTx(ctx, tx, s.keys, r.SessionID, entries); err != nil {
				return err
			}
		}
		for _, w := range kv {
			if _, err := tx.Exec(ctx, qKVSet, w.Namespace, w.Key, s.sealKV(w.Namespace, w.Key, w.Value)); err != nil {
				return fmt.Errorf("kv set %s/%s: %w", w.Namespace, w.Key, err)
			}
		}
		if r.Status != "" { // the run's end: its lease goes with it (loop.RunAppender)
			if _, err := tx.Exec(ctx, `DELETE FROM leases WHERE session = $1 AND run_id = $2`, r.SessionID, r.ID); err != nil {
				return fmt.Errorf("release lease of session %q: %w", r.SessionID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append to session %q: %w", r.SessionID, err)
	}
	return nil
}

func appendTx(ctx context.Context, tx pgx.Tx, keys *seal.Keys, session string, entries []loop.Entry) error {
	if err := lockSession(ctx, tx, session); err != nil {
		return err
	}
	if err := fenceTx(ctx, tx, session); err != nil {
		return err
	}
	own := transcriptCount(entries)
	ws, err := readWriteState(ctx, tx, session, own)
	if err != nil {
		return err
	}
	last := ws.last
	rows := make([][]any, len(entries))
	for i, e := range entries {
		if want := last + int64(i) + 1; e.Seq != want {
			return fmt.Errorf("append seq %d, want %d (another run writing?)", e.Seq, want)
		}
		body, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("entry %d: %w", e.Seq, err)
		}
		body = keys.Seal(body, seal.EntryAAD(session, e.Seq))
		rows[i] = []any{session, e.Seq, e.RunID, e.Time.UTC(), string(e.Kind), body}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"entries"}, []string{"session", "seq", "run_id", "time", "kind", "body"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	if err := extendTranscriptTx(ctx, tx, keys, session, ws, entries, own); err != nil {
		return err
	}
	// Delivered at commit, to every process listening (Watch).
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, session)
	return err
}

// Load returns every entry of a session in order.
func (s *Store) Load(ctx context.Context, session string) ([]loop.Entry, error) {
	rows, err := s.db.Query(ctx, `SELECT seq, body FROM entries WHERE session = $1 ORDER BY seq`, session)
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
		var e loop.Entry
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("load session %q: entry %d is not a valid entry: %w", session, seq, err)
		}
		if e.Seq != seq {
			return nil, fmt.Errorf("load session %q: entry %d says it is %d", session, seq, e.Seq)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load session %q: %w", session, err)
	}
	return out, nil
}

// SaveRun inserts or updates a run's summary row, keyed by (session, run id).
func (s *Store) SaveRun(ctx context.Context, r loop.RunRecord) error {
	var err error
	if _, fenced := loop.FenceOf(ctx, r.SessionID); fenced {
		err = s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
			if err := lockSession(ctx, tx, r.SessionID); err != nil {
				return err
			}
			if err := fenceTx(ctx, tx, r.SessionID); err != nil {
				return err
			}
			return saveRun(ctx, tx, r)
		})
	} else {
		err = saveRun(ctx, s.db, r)
	}
	if err != nil {
		return fmt.Errorf("save run %q: %w", r.ID, err)
	}
	return nil
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func saveRun(ctx context.Context, db execer, r loop.RunRecord) error {
	usage, _ := json.Marshal(r.Usage)
	_, err := db.Exec(ctx, `INSERT INTO runs (session, id, status, reason, started, ended, usage) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (session, id) DO UPDATE SET status = excluded.status, reason = excluded.reason, ended = excluded.ended, usage = excluded.usage`,
		r.SessionID, r.ID, string(r.Status), string(r.Reason), nullTime(r.Started), nullTime(r.Ended), usage)
	return err
}

// Runs lists a session's runs in the order they started.
func (s *Store) Runs(ctx context.Context, session string) ([]loop.RunRecord, error) {
	rows, err := s.db.Query(ctx, `SELECT id, session, status, reason, started, ended, usage FROM runs WHERE session = $1 ORDER BY started NULLS FIRST, id`, session)
	if err != nil {
		return nil, fmt.Errorf("runs of session %q: %w", session, err)
	}
	defer rows.Close()
	var out []loop.RunRecord
	for rows.Next() {
		var r loop.RunRecord
		var status, reason string
		var started, ended *time.Time
		var usage []byte
		if err := rows.Scan(&r.ID, &r.SessionID, &status, &reason, &started, &ended, &usage); err != nil {
			return nil, fmt.Errorf("runs of session %q: %w", session, err)
		}
		r.Status, r.Reason = loop.Status(status), loop.Reason(reason)
		if started != nil {
			r.Started = *started
		}
		if ended != nil {
			r.Ended = *ended
		}
		if err := json.Unmarshal(usage, &r.Usage); err != nil {
			return nil, fmt.Errorf("runs of session %q: run %q usage: %w", session, r.ID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Sessions lists stored sessions (those with entries or runs), most recently updated
// first.
func (s *Store) Sessions(ctx context.Context) ([]loop.SessionInfo, error) {
	rows, err := s.db.Query(ctx, `SELECT sid,
		(SELECT COUNT(*) FROM entries e WHERE e.session = sid),
		COALESCE((SELECT MAX(e.time) FROM entries e WHERE e.session = sid), (SELECT MAX(r.started) FROM runs r WHERE r.session = sid)) AS updated,
		(SELECT COUNT(*) FROM runs r WHERE r.session = sid)
		FROM (SELECT session AS sid FROM entries UNION SELECT session FROM runs) s ORDER BY updated DESC NULLS LAST, sid`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []loop.SessionInfo
	for rows.Next() {
		var si loop.SessionInfo
		var updated *time.Time
		if err := rows.Scan(&si.ID, &si.Entries, &updated, &si.Runs); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		if updated != nil {
			si.Updated = *updated
		}
		out = append(out, si)
	}
	return out, rows.Err()
}

// DeleteSession removes a session's entries and runs in one transaction, with what other
// packages keep of it in the database (OnDeleteSession); a session whose run holds a
// lease is refused.
func (s *Store) DeleteSession(ctx context.Context, session string) error {
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, session); err != nil {
			return err
		}
		var held int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM leases WHERE session = $1`, session).Scan(&held); err != nil {
			return err
		}
		if held > 0 {
			return loop.ErrSessionBusy
		}
		for _, q := range []string{`DELETE FROM entries WHERE session = $1`, `DELETE FROM runs WHERE session = $1`, `DELETE FROM feedback WHERE session = $1`,
			`DELETE FROM attachments WHERE session = $1`, `DELETE FROM session_owners WHERE session = $1`, `DELETE FROM shares WHERE session = $1`, `DELETE FROM tool_cache WHERE session = $1`} {
			if _, err := tx.Exec(ctx, q, session); err != nil {
				return err
			}
		}
		return deleteSessionData(ctx, tx, session) // erase.go: rows other packages keep
	})
	s.heads.Drop(session) // after the rows: a load meanwhile may have kept them
	if err != nil {
		return fmt.Errorf("delete session %q: %w", session, err)
	}
	return nil
}

// KVGet reads a plugin's value.
func (s *Store) KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	var v []byte
	err := s.db.QueryRow(ctx, `SELECT value FROM kv WHERE plugin = $1 AND key = $2`, plugin, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
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

const qKVSet = `INSERT INTO kv (plugin, key, value) VALUES ($1, $2, $3)
	ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value`

// sealKV is a plugin value as stored: sealed under its plugin and key, never NULL.
func (s *Store) sealKV(plugin, key string, value []byte) []byte {
	if value == nil {
		value = []byte{}
	}
	return s.keys.Seal(value, seal.KVAAD(plugin, key))
}

// KVSet writes a plugin's value.
func (s *Store) KVSet(ctx context.Context, plugin, key string, value []byte) error {
	_, err := s.db.Exec(ctx, qKVSet, plugin, key, s.sealKV(plugin, key, value))
	if err != nil {
		return fmt.Errorf("kv set %s/%s: %w", plugin, key, err)
	}
	return nil
}

// KVDelete removes a plugin's value.
// KVKeys lists a plugin's keys that start with prefix, sorted (loop.KVLister); limit < 0
// is no limit.
func (s *Store) KVKeys(ctx context.Context, plugin, prefix string, limit int) ([]string, error) {
	var lim *int
	if limit >= 0 {
		lim = &limit
	}
	rows, err := s.db.Query(ctx, `SELECT key FROM kv WHERE plugin = $1 AND starts_with(key, $2) ORDER BY key COLLATE "C" LIMIT $3`, plugin, prefix, lim)
	if err != nil {
		return nil, fmt.Errorf("kv keys %s: %w", plugin, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("kv keys %s: %w", plugin, err)
	}
	return keys, nil
}

func (s *Store) KVDelete(ctx context.Context, plugin, key string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM kv WHERE plugin = $1 AND key = $2`, plugin, key); err != nil {
		return fmt.Errorf("kv delete %s/%s: %w", plugin, key, err)
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
