package manifest

import (
	"errors"
	"strings"
	"testing"
)

// [attachments] max_part and max_session are sizes; left out they are 0 (the loop's
// defaults, 20 MiB and 100 MiB).
func TestAttachmentsLimitsDecodeAsSizes(t *testing.T) {
	m, err := Load(writeManifest(t, "[agent]\nname = \"a\"\n[attachments]\nmax_part = \"5MiB\"\nmax_session = \"1GiB\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Attachments != (AttachmentsConfig{MaxPart: 5 << 20, MaxSession: 1 << 30}) {
		t.Fatalf("got %+v", m.Attachments)
	}
	if m, err := Load(writeManifest(t, "[agent]\nname = \"a\"\n")); err != nil || m.Attachments != (AttachmentsConfig{}) {
		t.Fatalf("without the table: %v %+v", err, m.Attachments)
	}
}

// Nonsense is refused at its file, line and key: no size, zero, a part past 512 MiB, a
// part larger than its session (given, or the default), a session smaller than the
// default part, an unknown key.
func TestAttachmentsLimitsRefuseNonsenseAtTheirKey(t *testing.T) {
	for _, c := range []struct{ body, key, says string }{
		{"max_part = \"lots\"\n", "attachments.max_part", `invalid size "lots"`},
		{"max_part = 0\n", "attachments.max_part", "must be more than 0"},
		{"max_session = \"0B\"\n", "attachments.max_session", "must be more than 0"},
		{"max_part = \"1GiB\"\nmax_session = \"4GiB\"\n", "attachments.max_part", "1GiB is more than a part may be (at most 512MiB)"},
		{"max_part = \"10MiB\"\nmax_session = \"5MiB\"\n", "attachments.max_part", "10MiB is more than the session's max_session (5MiB)"},
		{"max_part = \"200MiB\"\n", "attachments.max_part", "200MiB is more than the session's max_session (100MiB)"},
		{"max_session = \"1MiB\"\n", "attachments.max_session", "1MiB is less than one part's max_part (20MiB, the default)"},
		{"max_parts = \"1MiB\"\n", "attachments.max_parts", ""},
	} {
		path := writeManifest(t, "[agent]\nname = \"a\"\n[attachments]\n"+c.body)
		_, err := Load(path)
		var me *Error
		if !errors.As(err, &me) || me.Key != c.key || me.Line != 4 || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: got %v, want an error at %s:4: %s saying %q", c.body, err, path, c.key, c.says)
		}
	}
}
