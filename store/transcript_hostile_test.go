package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/store/seal"
)

// Hostile: a projection damaged in the file (truncated, a bad length, a string that is
// not UTF-8, a wrong count, a bad checksum, a chunk of another session) is reported and
// the head read from the entries, never a panic; the projection is rebuilt.
func TestTranscriptProjectionThatIsCorruptFallsBackToTheEntries(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Append(ctx, "v", chat("v", 1, 5, "w")...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "other", chat("other", 1, lagMin/4, "o")...); err != nil {
		t.Fatal(err)
	}
	var good []byte
	if err := s.db.QueryRow(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'v') AND chunk = 0`).Scan(&good); err != nil {
		t.Fatal(err)
	}
	withCRC := fixCRC // damage that keeps the checksum right
	bad := map[string][]byte{
		"truncated":       good[:len(good)/2],
		"empty":           {},
		"no header":       []byte("AHT"),
		"bad checksum":    append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1),
		"invalid UTF-8":   withCRC(bytes.Replace(good, []byte("w 3: 2+3?"), []byte("w 3: 2+3\xff"), 1)),
		"bad length":      withCRC(setByte(good, chunkHeader+1, 0x7f)), // the first run id's
		"fields too long": withCRC(setByte(good, 27, 0x7f)),
		"huge count":      fixCRC(append(append(bytes.Clone(good[:8]), 0xff, 0xff, 0xff, 0x7f), good[12:]...)),
		"one count less":  fixCRC(append(append(bytes.Clone(good[:8]), good[8]-1, good[9], good[10], good[11]), good[12:]...)),
		"not sealed for it": func() []byte {
			var b []byte
			s.db.QueryRow(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'other')`).Scan(&b)
			return b
		}(),
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := s.db.Exec(`UPDATE transcripts SET body = ? WHERE sid = (SELECT sid FROM session_keys WHERE id = 'v') AND chunk = 0`, b); err != nil {
				t.Fatal(err)
			}
			var log logTo
			s.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
			// The claim's one statement does not use it either: no head, the run's
			// LoadHead then reads the entries, reports and rebuilds.
			s.heads.Drop("v")
			if cs, err := s.ClaimState(ctx, "v", "run-x"); err != nil || cs.Head != nil {
				t.Fatalf("claim state from a corrupt projection: %v, head %v", err, cs.Head != nil)
			}
			sameHead(t, coldHead(t, s, "v"), wantHead(t, s, "v"))
			if name != "not sealed for it" && !strings.Contains(log.String(), "transcript projection disagrees with its entries") {
				t.Fatalf("not reported: %q", log.String())
			}
			var now []byte
			s.db.QueryRow(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'v') AND chunk = 0`).Scan(&now)
			if _, err := decodeChunk(now, nil); err != nil {
				t.Fatalf("not rebuilt: %v", err)
			}
		})
	}
}

func setByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

func fixCRC(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], crcTable))
	return b
}

// Sealed store: the chunks are sealed as the entries are, so no message is in clear in
// the file or its -wal, and they open only for their own session and place.
func TestTranscriptProjectionIsSealedWhereEntriesAre(t *testing.T) {
	key, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sealed.db")
	s, err := OpenSQLiteWith(path, Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	es := chat("z", 1, 30, "zebracornflakes")
	for i := 0; i < len(es); i += 50 {
		if err := s.Append(ctx, "z", es[i:min(i+50, len(es))]...); err != nil {
			t.Fatal(err)
		}
	}
	if chunkRows(t, s, "z") < 2 {
		t.Fatal("not projected in several chunks")
	}
	var body []byte
	s.db.QueryRow(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'z') AND chunk = 0`).Scan(&body)
	if _, ok := seal.Sealed(body); !ok {
		t.Fatalf("chunk not sealed: %.40q", body)
	}
	sameHead(t, coldHead(t, s, "z"), wantHead(t, s, "z"))
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("zebracornflakes")) || bytes.Contains(b, []byte("You add numbers")) {
			t.Fatalf("%s holds a message in clear", f)
		}
	}
}

// A store that gets keys: its plain chunks are dropped with the entries Reseal rewrites
// (the update trigger), and the projection is rebuilt sealed under the current key.
func TestTranscriptProjectionIsResealedWithItsEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reseal.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Append(ctx, "r", chat("r", 1, 10, "w")...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	key, _ := seal.NewKey()
	keys, err := seal.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = OpenSQLiteWith(path, Options{Keys: keys}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Reseal(ctx); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s, "r"); n != 0 {
		t.Fatalf("%d plain chunks left after the reseal", n)
	}
	sameHead(t, coldHead(t, s, "r"), wantHead(t, s, "r"))
	var body []byte
	s.db.QueryRow(`SELECT body FROM transcripts WHERE sid = (SELECT sid FROM session_keys WHERE id = 'r') AND chunk = 0`).Scan(&body)
	if id, ok := seal.Sealed(body); !ok || id != keys.Current() {
		t.Fatalf("rebuilt chunk not sealed under the current key: %.40q", body)
	}
}
