//go:build !race

package workqueue_test

const raceEnabled = false
