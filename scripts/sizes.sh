#!/usr/bin/env bash
# sizes.sh checks the size limits of the project's Go code (make lint runs it): no
# function over cyclomatic complexity 20 (gocyclo: 1 + each if, for, range, non-default
# case and &&/||; a closure counts towards the function around it) and no file over 450
# lines. It prints each breach and fails when there is one.
#
# What it checks: every .go file under the directories given (default: the repository),
# the way the go tool sees them: testdata/, vendor/ and directories named .* or _* are
# skipped, and so is node_modules/. Exempt:
#   - test files (*_test.go): a test reads best as one scenario or one table of cases,
#     top to bottom, and splitting it to satisfy a count hides what it proves. Code that
#     tests import from a package of its own (memorytest, storetest, looptest...) is not
#     a test file and is held to the limits like any other package.
#   - generated files (Go's "// Code generated ... DO NOT EDIT." line, as *.pb.go carry):
#     nobody edits them, their generator decides their shape.
#
# Usage: bash scripts/sizes.sh [DIR...]     e.g. bash scripts/sizes.sh surface/server store
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
MAX_CYCLO=20
MAX_LINES=450
GOCYCLO=github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(.)

files=()
while IFS= read -r f; do
	if ! grep -qE '^// Code generated .* DO NOT EDIT\.$' "$f"; then
		files+=("$f")
	fi
done < <(find "${dirs[@]}" \
	\( -type d \( -name testdata -o -name vendor -o -name node_modules -o -name '.?*' -o -name '_*' \) -prune \) \
	-o \( -type f -name '*.go' ! -name '*_test.go' -print \) | sort)

if [ ${#files[@]} -eq 0 ]; then
	echo "sizes.sh: no Go files under ${dirs[*]}" >&2
	exit 1
fi

fail=0
# gocyclo exits 1 when it lists a function.
if ! "$GO" run "$GOCYCLO" -over "$MAX_CYCLO" "${files[@]}"; then
	echo "sizes.sh: the functions above are over cyclomatic complexity $MAX_CYCLO" >&2
	fail=1
fi
for f in "${files[@]}"; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$MAX_LINES" ]; then
		echo "$f: $n lines (at most $MAX_LINES)"
		fail=1
	fi
done
exit $fail
