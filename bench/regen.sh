#!/usr/bin/env bash
# Regenerates the figures of docs/PERFORMANCE.md: the full `cairn bench`
# run (every reachable backend, see CAIRN_TEST_* in the doc), the DBOS
# comparison on the same PostgreSQL, the plot, and, when Node.js and npm are
# installed, the LangGraph.js comparison (bench/langgraph/run.sh: npm
# packages, then about 90 minutes). Run from anywhere:
#
#	bench/regen.sh
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p results
(cd .. && go run ./cmd/cairn bench --json) > results/bench.json
go run ./dbos -steps 2000 > results/dbos.json
go run ./plot -in results/bench.json -out ../docs/performance.png
go run ./plot -long -in results/bench.json -out ../docs/long-sessions.png
echo "wrote results/bench.json, results/dbos.json, docs/performance.png and docs/long-sessions.png"
if command -v node >/dev/null && command -v npm >/dev/null; then
	langgraph/run.sh
else
	echo "skipped the LangGraph.js comparison (results/langgraph.json): it needs node and npm"
fi
