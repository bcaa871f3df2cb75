package workqueue_test

import "testing"

// FuzzQueueOps decodes the input into a sequence of queue operations (adds with priorities,
// delays and rate limits, Get, Done, Forget, clock steps, shutdowns) and checks every result
// against the reference model of model_test.go, with flows and aging off and on.
func FuzzQueueOps(f *testing.F) {
	f.Add([]byte{0, 1, 9, 0})                                // add, get
	f.Add([]byte{0, 1, 9, 0, 1, 12, 1, 0, 9})                // re-add while processing, done, get
	f.Add([]byte{3, 4, 1, 2, 3, 0, 9, 9, 9})                 // priorities
	f.Add([]byte{6, 2, 30, 16, 10, 9, 16, 30, 9})            // delays and steps
	f.Add([]byte{8, 3, 8, 3, 15, 3, 16, 5, 9, 14, 3, 15, 3}) // rate limits, forget
	f.Add([]byte{0, 1, 0, 2, 19, 3, 9, 9, 9, 0, 4})          // shutdown, drain remaining
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range []modelConfig{{}, {flows: true}, {aging: true}, {flows: true, aging: true}} {
			i := 0
			runModel(t, func() (byte, bool) {
				if i >= len(data) {
					return 0, false
				}
				i++
				return data[i-1], true
			}, len(data), cfg)
		}
	})
}
