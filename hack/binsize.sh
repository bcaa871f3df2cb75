#!/usr/bin/env bash
# Builds the everyday operator twice, examples/webapp on ctrlkit and hack/bench/cmd/webapp-cr on
# controller-runtime (the same operator), and prints each binary's size and the code each
# library's own packages and OpenTelemetry put in it (go tool nm -size).
#
#   OUT  directory for the binaries (default: a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$(mktemp -d)}
go build -o "$OUT/webapp" ./examples/webapp
(cd hack/bench && go build -o "$OUT/webapp-cr" ./cmd/webapp-cr)

# sum prints the bytes of the symbols whose names match $2 in binary $1.
sum() {
	go tool nm -size "$1" | awk -v re="$2" '$4 ~ re { s += $2 } END { printf "%.1f MB", s / 1e6 }'
}
printf '| binary | size | its library'"'"'s packages | OpenTelemetry | sharding |\n| --- | ---: | ---: | ---: | ---: |\n'
for b in webapp webapp-cr; do
	lib='^github.com/ctrlkit/ctrlkit/'
	[ "$b" = webapp-cr ] && lib='^sigs.k8s.io/controller-runtime/'
	printf '| %s | %s | %s | %s | %s |\n' "$b" "$(stat -c %s "$OUT/$b" | awk '{ printf "%.1f MB", $1 / 1e6 }')" \
		"$(sum "$OUT/$b" "$lib")" "$(sum "$OUT/$b" '^go.opentelemetry.io/')" "$(sum "$OUT/$b" '^github.com/ctrlkit/ctrlkit/sharding')"
done
