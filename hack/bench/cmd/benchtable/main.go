// Command benchtable reads `go test -bench` output and prints a Markdown table of medians, one
// row per workload and one column per implementation, with each peer's time as a multiple of
// the baseline's (so 3.0x means the baseline is three times faster).
//
// Benchmarks are matched by name: the sub-benchmark element impl=<name> picks the column, the
// rest of the name the row.
//
//	go test -bench . -benchmem -count 6 | go run ./cmd/benchtable -base ctrlkit
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	base := flag.String("base", "ctrlkit", "the implementation the others are compared with")
	flag.Parse()
	t, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(t.rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark results with impl=<name> on stdin")
		os.Exit(1)
	}
	t.write(os.Stdout, *base)
}

type key struct{ row, impl string }

type table struct {
	rows, impls []string // in order of first appearance
	samples     map[key]map[string][]float64
}

var (
	lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)
	implRE = regexp.MustCompile(`/impl=([^/]+)`)
)

func parse(r io.Reader) (*table, error) {
	t := &table{samples: map[key]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		im := implRE.FindStringSubmatch(m[1])
		if im == nil {
			continue
		}
		k := key{row: implRE.ReplaceAllString(m[1], ""), impl: im[1]}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: value %q: %w", m[1], fields[i], err)
			}
			if t.samples[k] == nil {
				t.samples[k] = map[string][]float64{}
				if !slices.Contains(t.rows, k.row) {
					t.rows = append(t.rows, k.row)
				}
				if !slices.Contains(t.impls, k.impl) {
					t.impls = append(t.impls, k.impl)
				}
			}
			t.samples[k][fields[i+1]] = append(t.samples[k][fields[i+1]], v)
		}
	}
	return t, sc.Err()
}

func median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2], true
	} else {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
}

func (t *table) metric(row, impl, unit string) (float64, bool) {
	return median(t.samples[key{row, impl}][unit])
}

func (t *table) write(w io.Writer, base string) {
	impls := slices.Clone(t.impls)
	if i := slices.Index(impls, base); i > 0 {
		impls = append([]string{base}, slices.Delete(impls, i, i+1)...)
	}
	head := []string{"benchmark"}
	for _, im := range impls {
		head = append(head, im+" time/op", im+" allocs/op")
	}
	for _, im := range impls {
		if im != base {
			head = append(head, im+" / "+base)
		}
	}
	fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat(" --- |", len(head)))
	for _, row := range t.rows {
		cells := []string{strings.TrimPrefix(row, "Benchmark")}
		for _, im := range impls {
			ns, ok := t.metric(row, im, "ns/op")
			if !ok {
				cells = append(cells, "–", "–")
				continue
			}
			allocs, _ := t.metric(row, im, "allocs/op")
			cells = append(cells, duration(ns), strconv.FormatFloat(allocs, 'f', -1, 64))
		}
		baseNS, haveBase := t.metric(row, base, "ns/op")
		for _, im := range impls {
			if im == base {
				continue
			}
			ns, ok := t.metric(row, im, "ns/op")
			if !ok || !haveBase || baseNS == 0 {
				cells = append(cells, "–")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2fx", ns/baseNS))
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	case ns >= 1e4:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.0f ns", ns)
	}
}
