#!/usr/bin/env bash
# Runs the peer benchmarks of this module and prints a benchstat table (implementations as
# columns) and a Markdown table of medians with each peer's time as a multiple of ctrlkit's.
#
#   BENCHTIME  per-benchmark time or count (default 1s)     BENCHCOUNT  runs of the suite (default 6)
#   BENCH      benchmark regexp (default .)                  OUT         directory for results (default: a temp dir)
#
# The test binary is built once and the whole suite runs BENCHCOUNT times in turn, so every
# implementation sees the machine's load alike; the ratios within one run are what to compare.
set -euo pipefail
cd "$(dirname "$0")"

BENCHTIME=${BENCHTIME:-1s}
BENCHCOUNT=${BENCHCOUNT:-6}
BENCH=${BENCH:-.}
OUT=${OUT:-$(mktemp -d)}
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

mkdir -p "$OUT"
raw="$OUT/raw.txt"
: >"$raw"
go test -c -o "$OUT/bench.test" .
for i in $(seq "$BENCHCOUNT"); do
	echo "== run $i/$BENCHCOUNT" >&2
	"$OUT/bench.test" -test.run '^$' -test.bench "$BENCH" -test.benchmem -test.benchtime "$BENCHTIME" | tee -a "$raw"
done

echo
echo "== benchstat ($raw)"
if ! go run "$BENCHSTAT" -col /impl "$raw"; then
	echo "benchstat could not run (no module proxy?); the table below has the medians" >&2
fi

echo
echo "== medians, and each peer's time/op as a multiple of ctrlkit's"
go run ./cmd/benchtable -base ctrlkit <"$raw"
