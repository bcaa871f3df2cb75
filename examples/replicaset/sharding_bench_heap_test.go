package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"regexp"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// heapAllocLine is HeapAlloc's line in the heap profile's text form.
var heapAllocLine = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// pooled is a sync.Pool the test fills, as promhttp fills its pool of gzip writers.
var pooled sync.Pool

// TestHeapAfterGCLeavesOutPooledMemory checks the benchmark's heap reading against a process
// (this one) whose sync.Pool holds large buffers put back just before the reading: one forced
// GC counts them (they move to the pool's victim cache and stay live), heapAfterGC does not.
func TestHeapAfterGCLeavesOutPooledMemory(t *testing.T) {
	// 32 MiB in 16 buffers: under the race detector, Put drops a quarter of what it is given at
	// random, so the checks ask for a quarter of it only.
	const (
		size    = 32 << 20
		buffers = 16
	)
	// Only the readings' GCs run: one started by the allocations would move the pool's content
	// to its victim cache before the reading, and a second would drop it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	srv := httptest.NewServer(pprof.Handler("heap"))
	defer srv.Close()
	hc := srv.Client()
	get := func(path string) (string, error) {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		return string(body), err
	}
	fill := func() {
		for range buffers {
			buf := make([]byte, size/buffers)
			pooled.Put(&buf)
		}
	}

	base, err := heapAfterGC(get)
	require.NoError(t, err)

	fill()
	body, err := get("/debug/pprof/heap?gc=1&debug=1")
	require.NoError(t, err)
	m := heapAllocLine.FindStringSubmatch(body)
	require.NotNil(t, m, "HeapAlloc in the heap profile")
	once, err := strconv.ParseUint(m[1], 10, 64)
	require.NoError(t, err)
	require.Greater(t, once, base.alloc+size/4, "one GC leaves the pooled buffer live")

	fill()
	got, err := heapAfterGC(get)
	require.NoError(t, err)
	require.Less(t, got.alloc, base.alloc+size/4, "heapAfterGC leaves the pooled buffer out")
}
