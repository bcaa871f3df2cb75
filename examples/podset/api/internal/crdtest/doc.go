// Package crdtest reads the generated CustomResourceDefinitions of the PodSet example in the
// tests of each API version: Parse decodes a manifest as the API machinery does, Nested reads
// a field of it. Whether a schema fits the Go types is customresource.VerifyCRD's job.
//
// Every function takes the test's *testing.T and fails it with the path of what is wrong.
package crdtest
