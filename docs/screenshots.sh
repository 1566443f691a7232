#!/bin/sh
# Regenerates the screenshots of the inspector in docs/ (inspector-*.png):
# the browser test TestBrowser_Screenshots drives headless Chromium over a
# fixture store and writes them here. Needs chromium (apt-get install
# chromium), or CAIRN_TEST_CHROMIUM naming a Chrome or Chromium binary.
set -eu
cd "$(dirname "$0")/.."
go test ./server -count=1 -run '^TestBrowser_(Screenshots|NarrowScreen|Memory|FleetAndWorkers|Search)$' -args -screenshots="$PWD/docs"
ls -l docs/inspector-*.png
