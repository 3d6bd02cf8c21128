#!/usr/bin/env bash
# stress.sh runs a command beside CPU hogs, to check that it passes on a loaded machine:
#
#   scripts/stress.sh [-n HOGS] -- make test
#   scripts/stress.sh -n 12 -- go test -race -count=1 -timeout 30m ./cmd/agenthost/
#
# HOGS busy loops (default: 6 per core, a load of about 14 on 2 cores) run at normal
# priority for as long as the command does, then stop; the command's exit status is the
# script's. The load average is printed at the start and the end. This is how the test
# suites' time bounds are checked (README "Testing on a busy machine"): every wait in a
# test polls for readiness within a generous bound and none asserts a duration.
set -euo pipefail
hogs=$(( $(nproc) * 6 ))
if [ "${1:-}" = "-n" ]; then hogs=$2; shift 2; fi
if [ "${1:-}" = "--" ]; then shift; fi
if [ $# -eq 0 ]; then
	echo "usage: $0 [-n HOGS] -- COMMAND..." >&2
	exit 2
fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq "$hogs"); do
	( while :; do :; done ) &
	pids+=($!)
done
echo "stress: $hogs busy loops; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$(date +%s)
status=0
"$@" || status=$?
echo "stress: exit $status after $(( $(date +%s) - start )) s; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
