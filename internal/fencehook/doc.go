// Package fencehook carries a Reconcile's write-fence recorder from package controller to the
// clients (package client, package customresource) through the context, so the clients record
// the fences of the writes they make without importing controller.
package fencehook
