package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
)

// onDisk reports which of the store's files (the database and its -wal) hold word, read
// raw, as someone with the disk would.
func onDisk(t *testing.T, s *SQLite, word string) []string {
	t.Helper()
	var in []string
	for _, f := range []string{s.Path(), s.Path() + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(word)) {
			in = append(in, filepath.Base(f))
		}
	}
	return in
}

func addSecrets(t *testing.T, s *SQLite, session, said, remembered string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Append(ctx, session, msgEntry(1, "the launch code is "+said)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, loop.RunRecord{ID: "r1", SessionID: session, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pdf := []byte("%PDF-1.4 the attached contract says " + said)
	if err := s.PutAttachment(ctx, session, loop.Attachment{SHA256: "h-" + session, MimeType: "application/pdf", Data: pdf}, 1<<20); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.AddMemory(ctx, memory.Entry{ID: "m-" + session, User: "ana", Kind: memory.KindFact, Text: "ana's vault code is " + remembered,
		Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
}

// Erasure erases in the file (issue 46): once DeleteSession and DeleteMemory answer, the
// erased words are in neither the database nor its -wal file, while the store stays open
// (serve keeps it open for as long as it runs). Before, the -wal file kept the pages the
// rows were inserted in.
func TestErasedWordsLeaveTheDatabaseAndItsWAL(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	addSecrets(t, s, "s1", "ZEBRA-4471-SAID", "OKAPI-9902-KEPT")
	addSecrets(t, s, "s2", "other-session-words", "other-memory-words")
	for _, w := range []string{"ZEBRA-4471-SAID", "OKAPI-9902-KEPT"} {
		if len(onDisk(t, s, w)) == 0 {
			t.Fatalf("%s is on disk nowhere before the delete: the test proves nothing", w)
		}
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if in := onDisk(t, s, "ZEBRA-4471-SAID"); len(in) > 0 {
		t.Fatalf("a deleted session's words (its entries or its attachment) remain in %v", in)
	}
	if in := onDisk(t, s, "the attached contract says"); len(in) != 1 {
		t.Fatalf("the other session's attachment is on disk in %v, want one file", in)
	}
	if n, err := s.DeleteMemory(ctx, memory.Filter{ID: "m-s1"}); err != nil || n != 1 {
		t.Fatalf("delete memory: %d %v", n, err)
	}
	if in := onDisk(t, s, "OKAPI-9902-KEPT"); len(in) > 0 {
		t.Fatalf("a deleted memory's words remain in %v", in)
	}
	// What was not erased is still there, and the store goes on writing.
	if es, err := s.Load(ctx, "s2"); err != nil || len(es) != 1 || es[0].Message.Text() != "the launch code is other-session-words" {
		t.Fatalf("the other session: %v %v", es, err)
	}
	if err := s.Append(ctx, "s2", msgEntry(2, "after")); err != nil {
		t.Fatal(err)
	}
}

// A reader on an old snapshot (another process's `sessions list`, say) keeps the log's
// pages: the delete is committed, but it does not answer success while the erased words
// may be in the -wal file. Once the reader ends, deleting again scrubs them.
func TestAnEraseThatAReaderHoldsBackSaysSo(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	addSecrets(t, s, "s1", "HERON-2210-SAID", "IBIS-7781-KEPT")
	other, err := sql.Open("sqlite", "file:"+s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	reader, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(`SELECT COUNT(*) FROM entries`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("reader: %d %v", n, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := s.DeleteSession(short, "s1"); !errors.Is(err, ErrNotScrubbed) {
		t.Fatalf("delete while a reader holds the log: %v, want ErrNotScrubbed", err)
	}
	if es, _ := s.Load(ctx, "s1"); len(es) != 0 {
		t.Fatalf("the delete itself was committed; %d entries left", len(es))
	}
	reader.Rollback()
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if in := onDisk(t, s, "HERON-2210-SAID"); len(in) > 0 {
		t.Fatalf("after the second delete the words remain in %v", in)
	}
}
