// Package bytesize renders byte counts for people, in logs, errors and
// debug pages.
package bytesize
