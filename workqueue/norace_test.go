//go:build !race

package workqueue

const raceEnabled = false
