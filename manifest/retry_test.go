package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// retry_on takes error kinds and HTTP statuses; an unknown kind, a status that is not an
// error's or a value of another type is refused at load, naming the file, line and key.
func TestRetryOnTakesKindsAndStatusesAndRefusesUnknownKindsAtTheirKey(t *testing.T) {
	withRetry := func(v string) string {
		return strings.Replace(goodManifest, "[agent.tool_policy]", "[agent.retry]\nretry_on = "+v+"\n[agent.tool_policy]", 1)
	}
	m, err := Load(writeManifest(t, withRetry(`["rate_limit", "server_error", 529, 503]`)))
	if err != nil {
		t.Fatal(err)
	}
	r := m.Agent.Retry.RetryOn
	if !slices.Equal(r.Kinds, []string{"rate_limit", "server_error"}) || !slices.Equal(r.Statuses, []int{529, 503}) || !r.Set() {
		t.Fatalf("retry_on %+v", r)
	}
	if m, err := Load(writeManifest(t, goodManifest)); err != nil || m.Agent.Retry.RetryOn.Set() {
		t.Fatalf("no retry_on: %+v, %v", m.Agent.Retry.RetryOn, err)
	}
	for v, want := range map[string]string{
		`["rate_limit", "sever_error"]`: `agent.retry.retry_on: unknown error kind "sever_error"`,
		`["auth"]`:                      `agent.retry.retry_on: unknown error kind "auth"`,
		`[200]`:                         `agent.retry.retry_on: 200 is not an error status`,
		`[5.5]`:                         `agent.retry.retry_on: want an error kind or an HTTP status`,
		`"rate_limit"`:                  `agent.retry.retry_on: want a list`,
	} {
		_, err := Load(writeManifest(t, withRetry(v)))
		var me *Error
		if err == nil || !errors.As(err, &me) || !strings.Contains(err.Error(), want) || !strings.HasSuffix(me.File, "agent.toml") || me.Line != 9 {
			t.Errorf("retry_on = %s: %v (line %d), want %q at line 9", v, err, lineOf(me), want)
		}
	}
}

func lineOf(e *Error) int {
	if e == nil {
		return -1
	}
	return e.Line
}
