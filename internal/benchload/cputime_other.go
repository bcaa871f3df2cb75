//go:build !unix

package benchload

func cpuTime() (ns int64, ok bool) { return 0, false }
