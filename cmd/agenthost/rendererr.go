package main

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// errorLine prints an error event once. A model call that keeps failing the same way
// emits one error event per attempt and then the run's failure, whose message ends with
// the same text ("model call failed after 4 attempts: provider: openai: cannot connect
// ..."); printed as they come that was the same line six times. So: the first attempt's
// failure is printed with ", retrying"; an attempt failing with the same message again is
// not; the last attempt (no longer retryable, same message) is not; and the run's failure
// that only wraps what was printed is shortened to its own words ("model call failed
// after 4 attempts"). runOnce then leaves out the closing "agenthost: ..." line when the
// transcript has said it (said). --json output keeps every event.
func (t *transcript) errorLine(d *loop.ErrorData) {
	msg := d.Message
	switch {
	case d.Retryable && msg == t.retried:
		return // the same failure again: the count comes with the run's failure
	case !d.Retryable && msg == t.retried:
		t.lastErr = d.Kind + ": " + msg // the last attempt of a series already shown
		return
	}
	shown := msg
	if t.lastErr != "" && strings.HasSuffix(msg, ": "+t.lastErr) {
		shown = strings.TrimSuffix(msg, ": "+t.lastErr) // it wraps the error above
	}
	retry := ""
	if d.Retryable {
		retry = ", retrying"
		t.retried = msg
	} else {
		t.retried = ""
	}
	t.lastErr = d.Kind + ": " + msg
	t.saidMsg = msg
	fmt.Fprintf(t.errw, "%s\n", t.style(red, fmt.Sprintf("! %s: %s%s", d.Kind, shown, retry)))
}

// said reports whether the last error the transcript printed (or covered) is err, so the
// caller need not print it again.
func (t *transcript) said(err error) bool {
	return err != nil && t.saidMsg != "" && t.saidMsg == termText(err.Error())
}
