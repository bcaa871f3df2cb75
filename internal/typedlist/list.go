// Package typedlist holds the one list type that client.Client and customresource.Client
// both return, so that both satisfy the same interface while neither package imports the
// other. Users name it client.List or customresource.List (aliases of List).
package typedlist

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// List is one page of a LIST answer: the list metadata (resourceVersion to start a watch
// from, the continue token of the next page) and the items as Go values of type T.
type List[T any] struct {
	metav1.ListMeta
	Items []T
}
