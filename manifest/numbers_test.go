package manifest

import (
	"strings"
	"testing"
)

// Hole 10: sizes and counts that overflow, or mean nothing, used to load silently as a
// default or a wrapped value. Each is refused with file:line: key.
func TestHole10_OverflowingAndMeaninglessNumbersAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace [2]string
		line    int
		key     string
		msg     string
	}{
		{"memory overflows uint64", [2]string{`memory = "32MiB"`, `memory = "17179869184GiB"`}, 24, "plugins.permissions.memory",
			`invalid size "17179869184GiB": too large`},
		{"memory beyond wasm32", [2]string{`memory = "32MiB"`, `memory = "5GiB"`}, 24, "plugins[0].permissions.memory",
			"more than a wasm32 module can address"},
		{"max_output beyond int64", [2]string{`max_input = "1 MiB"`, `max_output = "9223372036854775808"`}, 26, "plugins.permissions.max_output",
			`invalid size "9223372036854775808": too large`},
		{"digits beyond uint64", [2]string{`max_input = "1 MiB"`, `max_input = "99999999999999999999999"`}, 26, "plugins.permissions.max_input",
			"too large"},
		{"zero size", [2]string{`max_input = "1 MiB"`, `max_input = "0"`}, 26, "plugins.permissions.max_input",
			"must be more than 0"},
		{"negative pool", [2]string{`name = "calc"`, `name = "calc"` + "\npool_size = -3"}, 22, "plugins[0].pool_size",
			"-3 is out of range (0 to 1024)"},
		{"huge pool", [2]string{`name = "calc"`, `name = "calc"` + "\npool_size = 9223372036854775807"}, 22, "plugins[0].pool_size",
			"out of range (0 to 1024)"},
		{"pool beyond int64", [2]string{`name = "calc"`, `name = "calc"` + "\npool_size = 9223372036854775808"}, 22, "plugins.pool_size",
			"out of range"},
		{"negative iterations", [2]string{"max_iterations = 7", "max_iterations = -1"}, 7, "agent.max_iterations",
			"-1 is out of range"},
		{"huge parallel", [2]string{"max_parallel = 4", "max_parallel = 100000"}, 9, "agent.tool_policy.max_parallel",
			"100000 is out of range (0 to 1024)"},
		{"negative cost", [2]string{"max_iterations = 7", "max_iterations = 7\nmax_cost_usd = -0.5"}, 8, "agent.max_cost_usd",
			"-0.5 is not a non-negative finite number"},
		{"infinite price", [2]string{"[agent.tool_policy]", "[agent.pricing]\nprompt_per_mtok = inf\n[agent.tool_policy]"}, 9, "agent.pricing.prompt_per_mtok",
			"+Inf is not a non-negative finite number"},
		{"negative duration", [2]string{`timeout = "2s"`, `timeout = "-2s"`}, 25, "plugins.permissions.timeout",
			`invalid duration "-2s": negative`},
		{"overflowing duration", [2]string{`timeout = "2s"`, `timeout = "9999999999h"`}, 25, "plugins.permissions.timeout",
			`invalid duration "9999999999h"`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantManifestError(t, tc.replace, tc.line, tc.key, tc.msg) })
	}
}

// The neighbours of the refused values still load.
func TestHole10_NumbersAtTheirBoundsLoad(t *testing.T) {
	for _, edit := range [][2]string{
		{`memory = "32MiB"`, `memory = "4GiB"`},
		{`max_input = "1 MiB"`, `max_input = "9223372036854775807"`},
		{`max_input = "1 MiB"`, `max_input = "1"`},
		{`name = "calc"`, `name = "calc"` + "\npool_size = 1024"},
		{`name = "calc"`, `name = "calc"` + "\npool_size = 0"},
		{"max_parallel = 4", "max_parallel = 1024"},
		{"max_iterations = 7", "max_iterations = 0"},
	} {
		p := writeManifest(t, strings.Replace(goodManifest, edit[0], edit[1], 1))
		if _, err := Load(p); err != nil {
			t.Errorf("%s: %v", edit[1], err)
		}
	}
}

func TestParseSizeRefusesOverflow(t *testing.T) {
	for _, in := range []string{"17179869184GiB", "9223372036854775808", "18446744073709551616", "8589934592GiB"} {
		if v, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, v)
		}
	}
	if v, err := ParseSize("8589934591GiB"); err != nil || v != 8589934591<<30 {
		t.Errorf("ParseSize(8589934591GiB) = %d, %v", v, err)
	}
}
