package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"testing"
)

// walPages is the b-tree (table or index name) of each page written to the -wal file
// from byte offset from on, one element a frame, read from the frames' headers and
// mapped with dbstat. A store's WAL is truncated first by the caller (checkpointWAL).
func walPages(t *testing.T, s *SQLite) []string {
	p, _ := walPageNumbers(t, s)
	return p
}

// walPageNumbers is walPages with the page numbers.
func walPageNumbers(t *testing.T, s *SQLite) ([]string, []uint32) {
	t.Helper()
	b, err := os.ReadFile(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frameHeader, walHeader = 24, 32
	if len(b) < walHeader {
		return nil, nil
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	owner := map[uint32]string{}
	rows, err := s.db.QueryContext(context.Background(), `SELECT name, pageno FROM dbstat`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			t.Fatal(err)
		}
		owner[page] = name
	}
	rows.Close()
	var out []string
	var nums []uint32
	for off := walHeader; off+frameHeader+pageSize <= len(b); off += frameHeader + pageSize {
		page := binary.BigEndian.Uint32(b[off : off+4])
		name, ok := owner[page]
		if !ok {
			name = fmt.Sprintf("page %d (free)", page)
		}
		out = append(out, name)
		nums = append(nums, page)
	}
	return out, nums
}

// checkpointWAL copies the WAL into the database and empties it.
func checkpointWAL(t *testing.T, s *SQLite) {
	t.Helper()
	if _, err := s.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
}

// countPages counts pages by b-tree.
func countPages(pages []string) string {
	n := map[string]int{}
	for _, p := range pages {
		n[p]++
	}
	var names []string
	for k := range n {
		names = append(names, k)
	}
	sort.Strings(names)
	out := ""
	for _, k := range names {
		out += fmt.Sprintf("%s=%d ", k, n[k])
	}
	return out
}
