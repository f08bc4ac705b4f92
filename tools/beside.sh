#!/usr/bin/env bash
# Usage: beside.sh LOG BACKGROUND_COMMAND -- FOREGROUND_COMMAND...
#
# Runs BACKGROUND_COMMAND at the lowest CPU priority while
# FOREGROUND_COMMAND runs, then waits for it: make test runs the release
# check (goreleaser, which on a cold machine first compiles goreleaser
# itself, then a snapshot build) beside the tests, where it takes the CPU
# the tests leave idle instead of adding its minutes to the run. The
# background command's output goes to LOG and is printed if it fails. It
# runs in a process group of its own, ended (by that group's id) when the
# foreground command fails or this script is interrupted, so no build
# outlives the run.
set -euo pipefail
log="${1:?usage: beside.sh LOG BACKGROUND_COMMAND -- FOREGROUND_COMMAND...}"
bgcmd="${2:?usage: beside.sh LOG BACKGROUND_COMMAND -- FOREGROUND_COMMAND...}"
shift 2
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "beside.sh: no foreground command" >&2; exit 2; }

set -m # the background job gets a process group of its own
nice -n 19 bash -c "$bgcmd" >"$log" 2>&1 &
bg=$!
set +m
stop() { kill -TERM -- "-$bg" 2>/dev/null || true; }
trap stop EXIT INT TERM

"$@"

echo "== waiting for the background step ($bgcmd) ($(date -u +%T))"
if ! wait "$bg"; then
	cat "$log"
	echo "beside.sh: the background step failed: $bgcmd (its output is above and in $log)" >&2
	exit 1
fi
trap - EXIT INT TERM
tail -n 3 "$log"
