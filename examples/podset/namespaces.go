package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/informer"
)

// selectorLabel is the label docs/examples.md suggests for --namespace-selector.
const selectorLabel = "podset.ctrlkit.dev/watch"

func addNamespaceSelectorFlag(fs *pflag.FlagSet, v *string) {
	fs.StringVar(v, "namespace-selector", "", "watch only the namespaces whose labels match this selector (e.g. "+selectorLabel+
		"=true), following them as they are labelled and unlabelled; needs list and watch on namespaces (default all namespaces)")
}

// completeNamespaceSelector checks --namespace-selector against the other flags.
func completeNamespaceSelector(o *options, inMemory bool) error {
	if o.namespaceSelector == "" {
		return nil
	}
	if o.namespace != "" {
		return fmt.Errorf("--namespace-selector and --namespace: give one or the other")
	}
	if inMemory {
		return fmt.Errorf("--namespace-selector %q: the in-memory demo runs in %q; use it against a cluster (--kubeconfig)", o.namespaceSelector, demoNamespace)
	}
	if _, err := labels.Parse(o.namespaceSelector); err != nil {
		return fmt.Errorf("--namespace-selector %q: %w", o.namespaceSelector, err)
	}
	return nil
}

// namespaceSet is the set the controller follows with --namespace-selector, nil without.
func namespaceSet(env *demo.Env, selector string) (*informer.NamespaceSet, error) {
	if selector == "" {
		return nil, nil
	}
	set, err := informer.NamespacesMatching(env.Manager.Factory(), selector)
	if err != nil {
		return nil, fmt.Errorf("--namespace-selector: %w", err)
	}
	return set, nil
}
