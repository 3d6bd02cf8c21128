package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// starterManifest is what `agenthost init` writes: every section, commented.
const starterManifest = `# agent.toml — an agenthost manifest. Relative paths are relative to this file.
# Reference: README.md. Check it loads with "agenthost plugins list"; try it offline with
#   agenthost run --provider scripted "hello"
# and for real with OPENAI_API_KEY (and OPENAI_MODEL, OPENAI_BASE_URL) set:
#   agenthost run "hello"

[agent]
name = "assistant"
system_prompt = "You are a careful assistant. Use the tools when they help."
provider = "openai"                # one of the [providers.NAME] below; --provider overrides
model = "gpt-4o-mini"              # unless the provider's own model is set
max_iterations = 20                # then one tools-off call summarises (status incomplete)
# max_run_duration = "5m"
# max_tokens = 200000              # token budget for one run
# max_cost_usd = 0.50
# [agent.pricing]                 # $ per million tokens, when the provider reports no cost
# prompt_per_mtok = 0.15
# completion_per_mtok = 0.60

[agent.tool_policy]
max_parallel = 4                   # tool calls of one response run at once
max_duplicate_calls = 2            # same tool, same arguments: more than this stops the run
# max_calls_per_tool = 20
# require_approval = ["write_file"] # asks on the terminal (agenthost run --approve ask|all|none)

# Provider commands without a slash are found next to the agenthost binary, then on PATH.
[providers.openai]                 # any OpenAI-compatible server: OpenAI, Ollama, vLLM, llama.cpp, LM Studio
command = "agenthost-provider-openai"
model = "${OPENAI_MODEL}"          # when set, overrides agent.model
env = ["OPENAI_API_KEY", "OPENAI_BASE_URL"]   # the only host variables the adapter sees
# options = { base_url = "http://localhost:11434/v1" }
# first_token_timeout = "120s"     # a call with no first event by then is retried ("0s" = off)
# idle_timeout = "60s"             # ... or one silent this long mid-stream

[providers.scripted]               # replays a fixture: offline, deterministic (or script = "file.json")
command = "agenthost-provider-scripted"
model = "scripted"                 # agent.model is for openai: runs and spans name what answered
options = { script_json = '{"turns": [{"text": "Hello from the scripted provider. Set OPENAI_API_KEY and run without --provider scripted to talk to a real model."}]}' }

[store]
kind = "sqlite"                    # or "memory"
path = ".agenthost/sessions.db"

# Plugins are Wasm modules; everything is denied unless granted under permissions.
# "agenthost plugins new go|c|rust|assemblyscript|wat NAME" writes one to start from.
#
# A tool the model can call:
# [[plugins]]
# name = "calc"
# wasm = "plugins/calc.wasm"
# sha256 = "…"                     # optional pin: a different file refuses to load
# [plugins.permissions]
# memory = "32MiB"
# timeout = "2s"
# allowed_hosts = ["api.example.com"]
# allowed_paths = { "ro:./data" = "/data" }
#
# The other kinds shape the loop itself:
# [[plugins]]
# name = "window"
# kind = "context"                 # builds the messages each model call sees
# wasm = "plugins/sliding_window.wasm"
# [[plugins]]
# name = "budget"
# kind = "termination"             # on_step / before_final: continue, stop or retry
# wasm = "plugins/token_budget.wasm"
# [[plugins]]
# name = "redact"
# kind = "guardrail"               # checks input, tool arguments, tool results, output
# wasm = "plugins/redact.wasm"
`

func newInitCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use: "init", Short: "Write a commented starter agent.toml", Args: cobra.NoArgs,
		Example: `  agenthost init && agenthost run --provider scripted hello
  agenthost -c ~/agents/helper.toml init --force`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := manifestPath(cmd)
			if _, err := os.Stat(path); err == nil && !force {
				return usage(fmt.Errorf("%s exists; use --force to overwrite it", path))
			} else if err != nil && !errors.Is(err, os.ErrNotExist) {
				return failed(err)
			}
			if err := os.WriteFile(path, []byte(starterManifest), 0o644); err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return cmd
}
