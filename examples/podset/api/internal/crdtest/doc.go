// Package crdtest checks a hand-written CustomResourceDefinition against the Go types it
// serves, for the tests of each API version of the PodSet example: the manifest parses as the
// API machinery parses it, its schema is structural, and its properties match the types' JSON
// fields.
//
// Every function takes the test's *testing.T and fails it with the path of what is wrong.
package crdtest
