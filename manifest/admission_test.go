package manifest

import (
	"errors"
	"testing"
	"time"
)

func TestAdmissionTableDecodes(t *testing.T) {
	m, err := Load(writeManifest(t, "[agent]\nname = \"a\"\n[admission]\nmax_runs = 8\nqueue = 16\nqueue_timeout = \"30s\"\nper_user_in_flight = 2\nper_user_per_minute = 60\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := AdmissionConfig{MaxRuns: 8, Queue: 16, QueueTimeout: Duration(30 * time.Second), PerUserInFlight: 2, PerUserPerMinute: 60}
	if m.Admission != want {
		t.Fatalf("got %+v, want %+v", m.Admission, want)
	}
}

// A queue without max_runs has nothing to wait for, and a negative limit is a mistake:
// both are refused at their key.
func TestAdmissionRefusesAQueueWithoutMaxRunsAndNegativeLimits(t *testing.T) {
	for body, key := range map[string]string{
		"[admission]\nqueue = 4\n":                "admission.queue",
		"[admission]\nmax_runs = -1\n":            "admission.max_runs",
		"[admission]\nper_user_per_minute = -2\n": "admission.per_user_per_minute",
		"[admission]\nqueue_timeout = \"-1s\"\n":  "admission.queue_timeout",
	} {
		_, err := Load(writeManifest(t, "[agent]\nname = \"a\"\n"+body))
		var me *Error
		if !errors.As(err, &me) || me.Key != key {
			t.Errorf("%q: got %v, want an error at %s", body, err, key)
		}
	}
}
