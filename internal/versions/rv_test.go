package versions

import "testing"

func TestReached(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		reached    bool
	}{
		{"5", "5", true},
		{"4", "5", false},
		{"", "5", false},
		{"0", "5", false}, // an informer of an empty resource
		{"abc", "5", true},
		{"4", "", true},
		{"4", "abc", true},
	} {
		if got := Reached(tc.have, tc.want); got != tc.reached {
			t.Errorf("Reached(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.reached)
		}
	}
}

// Lag as the staleness check reports it.
func TestLag(t *testing.T) {
	for _, tc := range []struct {
		server, informer string
		want             int64
	}{
		{"120", "100", 20}, {"100", "100", 0}, {"99", "100", 0}, {"1000", "999", 1},
		{"", "100", -1}, {"100", "", -1}, {"abc", "100", -1}, {"012", "10", -1},
	} {
		if got := Lag(tc.server, tc.informer); got != tc.want {
			t.Errorf("Lag(%q, %q) = %d, want %d", tc.server, tc.informer, got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		have, want     string
		atLeast, newer bool
		lag            int64
		haveComparable bool
	}{
		{"5", "5", true, false, 0, true},
		{"6", "5", true, true, 0, true},
		{"5", "6", false, false, 1, true},
		{"10", "9", true, true, 0, true},   // numerically, not as strings
		{"9", "10", false, false, 1, true}, // "9" > "10" as strings
		{"abc", "5", true, true, -1, false},
		{"", "5", true, true, -1, false},
	} {
		if got := AtLeast(tc.have, tc.want); got != tc.atLeast {
			t.Errorf("AtLeast(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.atLeast)
		}
		if got := Newer(tc.have, tc.want); got != tc.newer {
			t.Errorf("Newer(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.newer)
		}
		if got := Lag(tc.want, tc.have); got != tc.lag {
			t.Errorf("Lag(%q, %q) = %d, want %d", tc.want, tc.have, got, tc.lag)
		}
		if got := Comparable(tc.have); got != tc.haveComparable {
			t.Errorf("Comparable(%q) = %v, want %v", tc.have, got, tc.haveComparable)
		}
	}
}
