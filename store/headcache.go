package store

import (
	"bytes"
	"container/list"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// HeadCache keeps the heads (loop.SessionHead) of the sessions a store last loaded, so
// that the next LoadHead of a session reads and decodes only the rows appended since:
// a run on a session of 801 messages then costs about what one on 9 does, where
// decoding the whole transcript again cost it 5× (BENCHMARKS.md, run start vs
// history). Entries are append-only, so a cached head stays a prefix of its session as
// long as the session is the same one: each head keeps the stored body of its last
// entry (the anchor), and the store's query checks that the row at that seq still holds
// it. A session deleted (by this process or another) and written again, or resealed
// under a new key, fails the check and is read whole. DeleteSession drops the session's
// head at once (SECURITY.md, "What erasure erases where").
//
// It holds at most MaxEntries transcript entries in all, dropping the heads used least
// recently; the stores (SQLite, store/postgres) make one each. Safe for concurrent use.
type HeadCache struct {
	mu      sync.Mutex
	max     int
	entries int
	lru     list.List // of *cachedHead, most recently used first
	by      map[string]*list.Element
}

// HeadCacheEntries is how many transcript entries a store's HeadCache keeps at most
// (about 4–8 MiB of decoded messages).
const HeadCacheEntries = 20000

type cachedHead struct {
	session string
	head    loop.SessionHead // Transcript may have room after its length: only the cache appends there
	anchor  []byte           // the stored body of the entry at head.LastSeq
}

// HeadSnapshot is a cached head as LoadHead starts from it: the rows after LastSeq are
// what is left to read, once the store has checked that the row at LastSeq is Anchor.
type HeadSnapshot struct {
	Head   loop.SessionHead // Transcript is shared: read only
	Anchor []byte
	el     *list.Element
}

// NewHeadCache returns a cache holding at most max transcript entries.
func NewHeadCache(max int) *HeadCache {
	return &HeadCache{max: max, by: map[string]*list.Element{}}
}

// Get returns the session's cached head, if any.
func (c *HeadCache) Get(session string) (HeadSnapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[session]
	if !ok {
		return HeadSnapshot{}, false
	}
	c.lru.MoveToFront(el)
	ch := el.Value.(*cachedHead)
	h := ch.head
	h.Transcript = h.Transcript[:len(h.Transcript):len(h.Transcript)]
	return HeadSnapshot{Head: h, Anchor: ch.anchor, el: el}, true
}

// Extend is the head after from (a Get of session, or the zero snapshot for a read of
// the whole session) with the entries read after it (add, in seq order), the new last
// seqs and the new anchor; it keeps the result for the next Get. The returned
// Transcript is shared with the cache: read only.
func (c *HeadCache) Extend(session string, from HeadSnapshot, add []loop.Entry, lastSeq, lastEventSeq int64, anchor []byte) loop.SessionHead {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ch *cachedHead
	if el, ok := c.by[session]; ok && el == from.el && el.Value.(*cachedHead).head.LastSeq == from.Head.LastSeq {
		ch = el.Value.(*cachedHead) // still the head from was: extend it in place
	} else {
		if ok {
			c.removeLocked(el)
		}
		tr := make([]loop.Entry, len(from.Head.Transcript), len(from.Head.Transcript)+len(add)+8)
		copy(tr, from.Head.Transcript)
		ch = &cachedHead{session: session, head: loop.SessionHead{Transcript: tr}}
		c.by[session] = c.lru.PushFront(ch)
		c.entries += len(tr)
	}
	// Appending past the length the snapshots handed out hold: none of them sees it.
	ch.head.Transcript = append(ch.head.Transcript, add...)
	c.entries += len(add)
	ch.head.LastSeq, ch.head.LastEventSeq = lastSeq, lastEventSeq
	if !bytes.Equal(ch.anchor, anchor) {
		ch.anchor = bytes.Clone(anchor)
	}
	c.lru.MoveToFront(c.by[session])
	h := ch.head
	h.Transcript = h.Transcript[:len(h.Transcript):len(h.Transcript)]
	for c.entries > c.max && c.lru.Len() > 0 {
		c.removeLocked(c.lru.Back())
	}
	return h
}

// Drop forgets the session's head.
func (c *HeadCache) Drop(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.by[session]; ok {
		c.removeLocked(el)
	}
}

func (c *HeadCache) removeLocked(el *list.Element) {
	ch := el.Value.(*cachedHead)
	c.entries -= len(ch.head.Transcript)
	delete(c.by, ch.session)
	c.lru.Remove(el)
}

// HeadRead gathers a head from the rows a store's head query returns after a snapshot
// (HeadCache.Get's, or the zero one for a whole session), in seq order.
type HeadRead struct {
	from     HeadSnapshot
	h        loop.SessionHead
	more     []loop.Entry
	anchor   []byte // the stored body of the last row read
	anchored bool
}

// NewHeadRead starts reading the rows after from.
func NewHeadRead(from HeadSnapshot) *HeadRead {
	return &HeadRead{from: from, h: from.Head, anchored: from.Head.LastSeq == 0}
}

// Anchored records that the row at from's last seq still holds from's anchor.
func (r *HeadRead) Anchored() { r.anchored = true }

// Add adds a decoded row after from's last seq; stored is its body as stored.
func (r *HeadRead) Add(e loop.Entry, stored []byte) {
	r.h.LastSeq, r.anchor = e.Seq, stored
	if e.Kind == loop.EntryEvent {
		r.h.LastEventSeq = e.Event.Seq
		return
	}
	r.more = append(r.more, e)
}

// Done is the head read (ok false when from's anchor did not hold: the session is not
// the one cached), kept in c for the next load.
func (r *HeadRead) Done(c *HeadCache, session string) (loop.SessionHead, bool) {
	switch {
	case !r.anchored:
		return loop.SessionHead{}, false
	case r.h.LastSeq == 0:
		return r.h, true // an empty session: nothing to keep
	case r.h.LastSeq == r.from.Head.LastSeq:
		return r.from.Head, true // nothing new
	}
	return c.Extend(session, r.from, r.more, r.h.LastSeq, r.h.LastEventSeq, r.anchor), true
}
