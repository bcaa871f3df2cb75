//go:build race

package workqueue

// raceEnabled skips allocation counts under the race detector, which allocates on its own.
const raceEnabled = true
