package versions

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// AtLeast reports whether have is want or newer. It is true when the two cannot be compared
// (either is not an integer), so nothing waits on a version it cannot judge.
func AtLeast(have, want string) bool {
	c, err := resourceversion.CompareResourceVersion(have, want)
	return err != nil || c >= 0
}

// Newer reports whether have is newer than want, or cannot be compared with it.
func Newer(have, want string) bool {
	c, err := resourceversion.CompareResourceVersion(have, want)
	return err != nil || c > 0
}

// Reached reports whether a cache that last applied have has reached want: what fences, the
// gate and the breaker all ask. A want that cannot be judged is reached (nothing waits on it);
// a cache that has applied nothing ("", or "0", which an informer of an empty resource may
// report) has not reached a want that can be judged.
func Reached(have, want string) bool {
	if !Comparable(want) {
		return true
	}
	if have == "" || have == "0" {
		return false
	}
	return AtLeast(have, want)
}

// Comparable reports whether v is a resourceVersion AtLeast and Newer can judge.
func Comparable(v string) bool {
	_, err := resourceversion.CompareResourceVersion(v, v)
	return err == nil
}

// Lag is server minus have: how many writes to the cluster's storage a cache at have has not
// seen (or may not have: storage revisions count writes to every resource). 0 when have is
// current or ahead; -1 when the two cannot be compared.
func Lag(server, have string) int64 {
	c, err := resourceversion.CompareResourceVersion(server, have)
	if err != nil {
		return -1
	}
	if c <= 0 {
		return 0
	}
	s, err1 := strconv.ParseUint(server, 10, 64)
	h, err2 := strconv.ParseUint(have, 10, 64)
	if err1 != nil || err2 != nil || s-h > 1<<62 {
		return -1
	}
	return int64(s - h)
}
