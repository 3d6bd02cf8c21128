package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/memory/memorytest"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/seal"
	"github.com/agenthost/agenthost/store/storetest"
)

func ring(t *testing.T, lines ...string) *seal.Keys {
	t.Helper()
	k, err := seal.Parse(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func openKeyed(t *testing.T, url string, keys *seal.Keys) *Store {
	t.Helper()
	s, err := OpenWith(context.Background(), url, Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// An encrypted PostgreSQL store passes the same suites, and holds no plaintext: the
// tables read through SQL show sealed values and word hashes only.
func TestSealedPostgresConformsAndKeepsNoPlaintext(t *testing.T) {
	srv := pgtest.Start(t)
	k, _ := seal.NewKey()
	keys := ring(t, k)
	t.Run("sessions", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) loop.SessionStore { return openKeyed(t, srv.NewDatabase(t), keys) })
	})
	t.Run("memory", func(t *testing.T) {
		memorytest.Run(t, func(t *testing.T) memory.Store { return openKeyed(t, srv.NewDatabase(t), keys) })
	})
	url := srv.NewDatabase(t)
	s := openKeyed(t, url, keys)
	ctx := context.Background()
	fillPG(t, s)
	var clear int
	if err := s.db.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM entries WHERE body::text LIKE '%zanzibar%')
		+ (SELECT COUNT(*) FROM kv WHERE position('zanzibar' in encode(value, 'escape')) > 0)
		+ (SELECT COUNT(*) FROM attachments WHERE position('zanzibar' in encode(data, 'escape')) > 0)
		+ (SELECT COUNT(*) FROM memories WHERE text LIKE '%zanzibar%' OR terms LIKE '%zanzibar%' OR tsv::text LIKE '%zanzibar%' OR metadata::text LIKE '%zanzibar%')`).Scan(&clear); err != nil {
		t.Fatal(err)
	}
	if clear != 0 {
		t.Fatalf("%d rows hold the secret in clear", clear)
	}
	checkPG(t, s)
	s.Close()
	if _, err := Open(ctx, url); !errors.Is(err, seal.ErrLocked) {
		t.Fatalf("open without keys: %v", err)
	}
}

func fillPG(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	e := loop.Entry{Seq: 1, RunID: "r1", Time: time.Now(), Kind: loop.EntryMessage, Message: &loop.Message{Role: loop.RoleUser, Content: []loop.Part{{Type: "text", Text: "zanzibar prompt"}}}}
	if err := s.Append(ctx, "s1", e); err != nil {
		t.Fatal(err)
	}
	if err := s.KVSet(ctx, "notes", "k", []byte("zanzibar value")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAttachment(ctx, "s1", loop.Attachment{SHA256: "h1", MimeType: "text/plain", Data: []byte("zanzibar attached")}, 1<<20); err != nil {
		t.Fatal(err)
	}
	m, _ := memory.New("ana", "", memory.KindFact, "zanzibar lives in Lisbon", time.Now())
	m.Metadata = map[string]string{"source": "zanzibar meta"}
	if err := s.AddMemory(ctx, m); err != nil {
		t.Fatal(err)
	}
}

func checkPG(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if es, err := s.Load(ctx, "s1"); err != nil || len(es) != 1 || es[0].Message.Text() != "zanzibar prompt" {
		t.Fatalf("Load = %+v, %v", es, err)
	}
	if v, _, err := s.KVGet(ctx, "notes", "k"); err != nil || string(v) != "zanzibar value" {
		t.Fatalf("KVGet = %q, %v", v, err)
	}
	if a, err := s.Attachment(ctx, "s1", "h1"); err != nil || string(a.Data) != "zanzibar attached" {
		t.Fatalf("Attachment = %q, %v", a.Data, err)
	}
	hits, err := s.SearchMemory(ctx, memory.Query{User: "ana", Text: "lisbon"})
	if err != nil || len(hits) != 1 || hits[0].Metadata["source"] != "zanzibar meta" {
		t.Fatalf("SearchMemory = %+v, %v", hits, err)
	}
}

// A plain database gets keys, is resealed, then rotated to a second key: the second key
// alone then opens everything.
func TestPostgresRotateKey(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDatabase(t)
	fillPG(t, openKeyed(t, url, nil))
	k1, _ := seal.NewKey()
	k2, _ := seal.NewKey()
	s := openKeyed(t, url, ring(t, k1))
	checkPG(t, s)
	if st, err := s.Reseal(context.Background()); err != nil || st.Entries != 1 || st.Values != 1 || st.Memories != 1 || st.Attachments != 1 {
		t.Fatalf("Reseal = %+v, %v", st, err)
	}
	s = openKeyed(t, url, ring(t, k2, k1))
	checkPG(t, s)
	if st, err := s.Reseal(context.Background()); err != nil || st.Entries != 1 || st.Memories != 1 || st.Attachments != 1 {
		t.Fatalf("rotation = %+v, %v", st, err)
	}
	checkPG(t, openKeyed(t, url, ring(t, k2)))
}
