package manifest

import "time"

// AdmissionConfig is the [admission] table: how many runs the host takes at once and
// from whom (host/admission.go). Every entry through the host's door counts — a run
// of any surface, a tool call outside a run (`mcp serve`, workflow tool steps) — except
// what a run makes itself (nested runs, sampling). Zero values are off.
type AdmissionConfig struct {
	// MaxRuns is how many runs may be in flight at once (0: no limit).
	MaxRuns int `toml:"max_runs"`
	// Queue is how many runs past MaxRuns may wait for a place, first come first served,
	// each told its position; a run past the queue is refused (HTTP 429 with Retry-After).
	Queue int `toml:"queue"`
	// QueueTimeout is how long a run waits in the queue at most (default 1m); a run whose
	// own deadline (or client) ends first leaves it then. Either way it fails with a clear
	// error and no run is stored.
	QueueTimeout Duration `toml:"queue_timeout"`
	// PerUserInFlight is how many runs one user may have in flight or queued (0: no limit).
	PerUserInFlight int `toml:"per_user_in_flight"`
	// PerUserPerMinute is how many runs one user may start a minute, as a bucket that
	// refills continuously (0: no limit).
	PerUserPerMinute int `toml:"per_user_per_minute"`
}

// DefaultQueueTimeout is [admission] queue_timeout when unset.
const DefaultQueueTimeout = time.Minute

func (m *Manifest) checkAdmission() error {
	a := m.Admission
	for _, k := range []struct {
		key string
		v   int
	}{{"max_runs", a.MaxRuns}, {"queue", a.Queue}, {"per_user_in_flight", a.PerUserInFlight}, {"per_user_per_minute", a.PerUserPerMinute}} {
		if k.v < 0 {
			return m.ErrorAt("admission."+k.key, "must not be negative (0 is no limit)")
		}
	}
	if a.Queue > 0 && a.MaxRuns == 0 {
		return m.ErrorAt("admission.queue", "a queue needs max_runs: runs wait only for a place among max_runs")
	}
	if a.QueueTimeout < 0 {
		return m.ErrorAt("admission.queue_timeout", "must not be negative")
	}
	return nil
}
