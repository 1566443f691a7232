#!/usr/bin/env bash
# Runs the long-conversation comparison of cairn and LangGraph.js
# (docs/PERFORMANCE.md, "cairn and LangGraph.js: a long conversation") and
# writes bench/results/langgraph.json. Needs Node.js 20 or later with npm,
# Go, and PostgreSQL at CAIRN_TEST_POSTGRES (or postgres://postgres@127.0.0.1:5432/test).
# Flags go to `longconv compare` (-rounds, -turns, -loads, -only):
#
#	bench/langgraph/run.sh
#	bench/langgraph/run.sh -rounds 3
set -euo pipefail
cd "$(dirname "$0")"
# node_modules as package-lock.json pins them (better-sqlite3 builds from
# source when no prebuilt binary can be had: a few minutes).
if ! npm ls --omit=dev >/dev/null 2>&1; then
	npm ci --no-audit --no-fund
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd .. && go build -o "$work/longconv" ./longconv)
"$work/longconv" compare -langgraph "$PWD" -dir "$work" "$@" >"$work/langgraph.json"
mkdir -p ../results
mv "$work/langgraph.json" ../results/langgraph.json
echo "wrote bench/results/langgraph.json"
