// Package tools pins the code generators ctrlkit's examples run with go generate, in a
// module of their own so that they never become dependencies of github.com/ctrlkit/ctrlkit:
// a user who imports the library does not download controller-tools, and the library's
// k8s.io versions are not held back or pushed forward by the generator's.
//
// tools.go (build tag tools) imports controller-gen so that this go.mod records its version.
// Run it from a package of the main module, pointing -modfile here:
//
//	//go:generate go run -modfile=../../../../hack/tools/go.mod sigs.k8s.io/controller-tools/cmd/controller-gen object crd paths=. output:crd:dir=.
//
// controller-gen then builds from this module's versions and reads the package it generates
// for with the main module's, because it loads packages from the directory it runs in.
//
// The step after controller-gen, crdmanifest, is a command of the main module
// (github.com/ctrlkit/ctrlkit/cmd/crdmanifest) so that users' modules can run it too; it
// imports nothing the library does not. See docs/custom-resources.md.
package tools
