#!/usr/bin/env bash
# Walks the README's command blocks in order, as a newcomer on a fresh clone would, and
# stops at the first that fails (set -e), saying which: setup (`make demo`), a real model
# (`make build`, then `run --provider openai` against a loopback OpenAI-compatible server),
# the plugins listing, `serve`, and the workflows example. `make test` itself is left out.
#
# The OpenAI-compatible server is OPENAI_BASE_URL, which must be a loopback URL: the Go test
# TestE2E_READMEWalkthrough (cmd/agenthost) starts one that replays a recorded answer and
# runs this script, so `make test` (and CI) runs it:
#   go test -run TestE2E_READMEWalkthrough ./cmd/agenthost/
set -euo pipefail
cd "$(dirname "$0")/.."

case "${OPENAI_BASE_URL:-}" in
http://127.0.0.1:* | http://localhost:*) ;;
*)
  echo "walkthrough: OPENAI_BASE_URL must be a loopback OpenAI-compatible server (run it through: go test -run TestE2E_READMEWalkthrough ./cmd/agenthost/)" >&2
  exit 2
  ;;
esac

step() { echo "== walkthrough: $*" >&2; }
trap 'echo "walkthrough: FAILED at: $BASH_COMMAND" >&2' ERR

step "Setup: make demo"
out=$(make demo)
grep -q "together 942" <<<"$out"

step "Using a real model: make build, then run --provider openai"
make build
export OPENAI_API_KEY=walkthrough OPENAI_MODEL=gpt-4o-mini
out=$(./bin/agenthost run --provider openai "What is 17*23 + 19*29?")
grep -q "Hello, world!" <<<"$out"

step "plugins list"
out=$(./bin/agenthost plugins list)
grep -q "^calc " <<<"$out"

step "serve: the console and the API on loopback"
log=$(mktemp)
./bin/agenthost serve --addr 127.0.0.1:0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
addr=""
for _ in $(seq 1 1800); do # readiness by polling, bounded (3 minutes)
  addr=$(sed -n 's/^agenthost: serving on \([^ ]*\).*/\1/p' "$log" | head -1) # http://127.0.0.1:PORT
  [ -n "$addr" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "serve did not start" >&2; cat "$log" >&2; exit 1; }
curl -fsS "$addr/healthz" >/dev/null
page=$(curl -fsS "$addr/") # captured first: with pipefail, grep -q closing the pipe early fails curl (exit 23)
grep -q "<html" <<<"$page"
kill "$pid"
wait "$pid" || true

step "Workflows: examples/workflows, as its comments say"
bash scripts/plugins.d/examples.sh files text calc >/dev/null
run_id="walk-$$-$RANDOM"
(
  cd examples/workflows
  out=$(../../bin/agenthost workflow list)
  grep -q "^sales" <<<"$out"
  rc=0
  ../../bin/agenthost workflow run sales --input '{"path": "/data/sales.txt"}' --run-id "$run_id" >/dev/null || rc=$?
  [ "$rc" = 3 ] || { echo "workflow run sales: exit $rc, want 3 (waiting for approval)" >&2; exit 1; }
  out=$(../../bin/agenthost workflow run sales --run-id "$run_id" --approve publish)
  grep -q '"status": *"completed"' <<<"$out"
)
step "all README blocks passed"
