package benchload_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/benchload"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Parallel drives a queue from a benchmark; testing.Benchmark runs one here.
func ExampleParallel() {
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "default/object-" + strconv.Itoa(i)
	}
	r := testing.Benchmark(func(b *testing.B) {
		q := workqueue.New[string]()
		benchload.Parallel(b, q, 2, keys, func(_ int, key string) { q.Add(key) }, q.ShutDownWithDrain)
	})
	fmt.Println(r.N > 0, r.Extra["dedup/op"] < 0.5)
	// Output: true true
}
