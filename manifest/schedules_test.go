package manifest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/schedule"
)

func TestSchedulesDecodeWithTheirGridAndPolicy(t *testing.T) {
	m, err := Load(writeManifest(t, `[agent]
name = "a"
[workflows.digest]
inputs = { type = "object", required = ["days"], properties = { days = { type = "integer" } } }
steps = [{ id = "s", prompt = "summarise {{ inputs.days }} days" }]

[[schedules]]
name = "hourly"
every = "1h"
user = "alice"
prompt = "anything new?"
missed = "run_once"

[[schedules]]
name = "nightly"
cron = "0 3 * * *"
user = "bob"
workflow = "digest"
inputs = { days = 1 }
`))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := m.Schedule("hourly")
	if !ok || h.Policy() != schedule.RunOnce || h.When() != "every 1h0m0s" || h.Spec() == nil {
		t.Fatalf("hourly: %+v", h)
	}
	n, _ := m.Schedule("nightly")
	if n.Policy() != schedule.Skip || string(n.InputsJSON()) != `{"days":1}` {
		t.Fatalf("nightly: %+v %s", n, n.InputsJSON())
	}
	at := time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC)
	if got := n.Spec().Next(at); !got.Equal(at.Add(23 * time.Hour)) {
		t.Fatalf("nightly next %s", got)
	}
}

// Each mistake is refused at the key that holds it, with the reason.
func TestSchedulesRefuseEachMistakeAtItsKey(t *testing.T) {
	const wf = "[workflows.digest]\ninputs = { type = \"object\", required = [\"days\"] }\nsteps = [{ id = \"s\", prompt = \"x\" }]\n"
	for body, want := range map[string][2]string{
		`name = "Bad Name"` + "\nevery = \"1h\"\nuser = \"u\"\nprompt = \"p\"":                                             {"schedules[0].name", "lower-case"},
		`name = "a"` + "\nevery = \"1h\"\nprompt = \"p\"":                                                                  {"schedules[0]", "user is required"},
		`name = "a"` + "\ncron = \"@every 1m\"\nuser = \"u\"\nprompt = \"p\"":                                              {"schedules[0].cron", "every = "},
		`name = "a"` + "\ncron = \"0 0 30 2 *\"\nuser = \"u\"\nprompt = \"p\"":                                             {"schedules[0].cron", "matches no date"},
		`name = "a"` + "\nevery = \"100ms\"\nuser = \"u\"\nprompt = \"p\"":                                                 {"schedules[0].every", "at least 1s"},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"":                                                                    {"schedules[0]", "give prompt or workflow"},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"\nprompt = \"p\"\nmissed = \"all\"":                                  {"schedules[0].missed", `"skip" or "run_once"`},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"\nworkflow = \"nope\"":                                               {"schedules[0].workflow", "unknown workflow"},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"\nworkflow = \"digest\"":                                             {"schedules[0].inputs", "days"},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"\nprompt = \"p\"\nagent = \"x\"":                                     {"schedules[0].agent", "unknown agent"},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"\nprompt = \"p\"\nrecent_sessions = 51":                              {"schedules[0].recent_sessions", "0 to 50"},
		`name = "a"` + "\nevery = \"1h\"\nuser = \"u\"\nworkflow = \"digest\"\ninputs = { days = 1 }\nrecent_sessions = 2": {"schedules[0].recent_sessions", "for a prompt"},
	} {
		_, err := Load(writeManifest(t, "[agent]\nname = \"a\"\n"+wf+"[[schedules]]\n"+body+"\n"))
		var me *Error
		if !errors.As(err, &me) || me.Key != want[0] || !strings.Contains(err.Error(), want[1]) {
			t.Errorf("%q: got %v, want an error at %s with %q", body, err, want[0], want[1])
		}
	}
	_, err := Load(writeManifest(t, "[agent]\nname = \"a\"\n[[schedules]]\nname = \"a\"\nevery = \"1h\"\nuser = \"u\"\nprompt = \"p\"\n[[schedules]]\nname = \"a\"\nevery = \"2h\"\nuser = \"u\"\nprompt = \"p\"\n"))
	if err == nil || !strings.Contains(err.Error(), `duplicate schedule "a"`) {
		t.Errorf("duplicate: %v", err)
	}
}
