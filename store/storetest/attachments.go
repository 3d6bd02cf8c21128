package storetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// attachments: an attachment is kept once per session and hash and read back whole; a
// session's total is bounded (the same hash again costs nothing); another session does
// not see it; and it goes with its session.
func attachments(t *testing.T, s loop.SessionStore) {
	as, ok := s.(loop.AttachmentStore)
	if !ok {
		t.Fatalf("%T keeps no attachments (loop.AttachmentStore)", s)
	}
	ctx := context.Background()
	big := bytes.Repeat([]byte{0, 1, 2, 0xFF}, 1<<16) // 256 KiB, not valid UTF-8
	a := loop.Attachment{SHA256: "aa", MimeType: "application/pdf", Data: big}
	for range 2 {
		if err := as.PutAttachment(ctx, "s", a, 300<<10); err != nil {
			t.Fatal(err)
		}
	}
	got, err := as.Attachment(ctx, "s", "aa")
	if err != nil || got.MimeType != "application/pdf" || !bytes.Equal(got.Data, big) {
		t.Fatalf("Attachment = %s %d bytes, %v", got.MimeType, len(got.Data), err)
	}
	if _, err := as.Attachment(ctx, "other", "aa"); !errors.Is(err, loop.ErrNoAttachment) {
		t.Fatalf("another session's attachment: %v", err)
	}
	// Two writers racing past the session's limit: one wins, one is refused.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, sha := range []string{"bb", "cc"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = as.PutAttachment(ctx, "s", loop.Attachment{SHA256: sha, MimeType: "text/plain", Data: make([]byte, 30<<10)}, 300<<10)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), loop.ErrAttachmentTooLarge) {
		t.Fatalf("racing past the session limit: %v, %v", errs[0], errs[1])
	}
	if err := s.Append(ctx, "s", entries("s", "r", 1, 1)...); err != nil {
		t.Fatal(err)
	}
	if err := s.(loop.SessionDeleter).DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Attachment(ctx, "s", "aa"); !errors.Is(err, loop.ErrNoAttachment) {
		t.Fatalf("after the session's delete: %v", err)
	}
}
