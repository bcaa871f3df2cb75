//go:build race

package workqueue_test

// raceEnabled scales the randomized tests down under the race detector.
const raceEnabled = true
