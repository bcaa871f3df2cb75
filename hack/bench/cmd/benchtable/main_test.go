package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkQueue/workload=roundtrip/impl=ctrlkit-2    100  100.0 ns/op  0 B/op  0 allocs/op
BenchmarkQueue/workload=roundtrip/impl=clientgo-2   100  300.0 ns/op  16 B/op  1 allocs/op
BenchmarkQueue/workload=roundtrip/impl=ctrlkit-2    100  120.0 ns/op  0 B/op  0 allocs/op
BenchmarkQueue/workload=roundtrip/impl=clientgo-2   100  330.0 ns/op  16 B/op  1 allocs/op
BenchmarkQueue/workload=roundtrip/impl=ctrlkit-2    100  110.0 ns/op  0 B/op  0 allocs/op
BenchmarkQueue/workload=roundtrip/impl=clientgo-2   100  990.0 ns/op  16 B/op  1 allocs/op
BenchmarkQueue/workload=prio/impl=ctrlkit           100  2000000 ns/op  3 allocs/op
PASS
`

func TestTableMediansAndRatios(t *testing.T) {
	tab, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tab.write(&out, "ctrlkit")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header, rule and 2 rows, got:\n%s", out.String())
	}
	// medians: ctrlkit 110, clientgo 330 -> 3.00x
	if want := "| Queue/workload=roundtrip | 110 ns | 0 | 330 ns | 1 | 3.00x |"; lines[2] != want {
		t.Errorf("row = %q, want %q", lines[2], want)
	}
	if want := "| Queue/workload=prio | 2.0 ms | 3 | – | – | – |"; lines[3] != want {
		t.Errorf("row = %q, want %q", lines[3], want)
	}
}

func TestBadValueIsReported(t *testing.T) {
	_, err := parse(strings.NewReader("BenchmarkX/impl=a-2 10 abc ns/op\n"))
	if err == nil || !strings.Contains(err.Error(), "BenchmarkX/impl=a") {
		t.Fatalf("err = %v, want one naming the benchmark", err)
	}
}
