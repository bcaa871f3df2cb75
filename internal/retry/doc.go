// Package retry calls a read until it succeeds, for the reads a controller cannot go on
// without (the consistent reads of Freshness.Gate, in a controller and in each cluster of a
// multicluster Fleet), with the one growing interval they share: a second after the first
// failure, twice as long after each next one, at most 30 s.
package retry
