package store

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/storetest"
)

// A cold read gives its messages in one array across all the chunks and the rows after
// them (loop.SessionHead.Messages), with room after it that is the caller's: a second
// cold read gives another array, the head the store keeps never hands it out, and what
// the caller appends into the room changes nothing the store keeps. With a compaction
// in the transcript there is no such array.
func TestColdReadGivesItsMessagesInOneArrayOfItsOwn(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	es := chat("s", 1, 30, "w")
	for i := 0; i < len(es); { // several appends: several chunks, and rows after them
		n := min(1+i%23, len(es)-i)
		if err := s.Append(ctx, "s", es[i:i+n]...); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	if n := chunkRows(t, s, "s"); n < 2 {
		t.Fatalf("%d chunks, want several", n)
	}
	storetest.ColdMessagesInOneArray(t, s, "s", 121, int64(len(es)), func() loop.SessionHead { return coldHead(t, s, "s") },
		func(h loop.SessionHead) { sameHead(t, h, wantHead(t, s, "s")) })
}
