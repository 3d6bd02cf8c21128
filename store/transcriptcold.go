package store

import (
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// ColdChunks is what a store's cold read makes of the transcript projection (this
// package's SQLite store, and the PostgreSQL store): the chunk rows, opened and checked
// as they come, decoded once all have come into one array each of entries and messages,
// and the transcript rows read after them moved into the room left after those messages,
// so that the head holds its messages in one array (loop.SessionHead.Messages).
type ColdChunks struct {
	views  []chunkView
	chunks int
	why    string
	msgs   []loop.Message // the messages in one array; nil when there is none (a compaction)
}

// Add opens and checks the next chunk row (the one stored under chunk). stored may be
// the driver's bytes, valid until its next row: what is kept is a copy.
func (c *ColdChunks) Add(keys *seal.Keys, session string, chunk int64, stored []byte) {
	c.chunks++
	if c.why == "" {
		var v chunkView
		if v, c.why = openChunkView(keys, session, int64(c.chunks-1), chunk, stored); c.why == "" {
			c.views = append(c.views, v)
		}
	}
}

// Chunks is how many chunk rows were added.
func (c *ColdChunks) Chunks() int { return c.chunks }

// Decode decodes the chunks added, in order, into entries with room for headSpare more
// (more of them are to follow: the rows after the chunks), their messages in one array
// with as much room; of none, it makes the array the rows after them go to. why says why
// the chunks cannot be used ("" if they can).
func (c *ColdChunks) Decode(more int) (tr []loop.Entry, why string) {
	if c.why == "" && len(c.views) > 0 {
		tr, c.msgs, c.why = decodeViews(c.views, headSpare)
	} else if c.why == "" {
		c.msgs = make([]loop.Message, 0, more+headSpare)
	}
	c.views = nil
	return tr, c.why
}

// InArray is e, a transcript row read after the chunks, with its message moved into the
// room Decode left after theirs (no copy of the array); an entry that cannot be (a
// compaction, no room left) means the head has no such array.
func (c *ColdChunks) InArray(e loop.Entry) loop.Entry {
	if c.msgs != nil && e.Message != nil && e.Compaction == nil && len(c.msgs) < cap(c.msgs) {
		c.msgs = append(c.msgs, *e.Message)
		e.Message = &c.msgs[len(c.msgs)-1]
	} else {
		c.msgs = nil
	}
	return e
}

// SetMessages sets h.Messages to the array when it holds the message of every entry
// of h.Transcript (after Decode and InArray of each row after the chunks).
func (c *ColdChunks) SetMessages(h *loop.SessionHead) {
	if len(c.msgs) == len(h.Transcript) && len(c.msgs) > 0 {
		h.Messages = c.msgs
	}
}
