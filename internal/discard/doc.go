// Package discard provides a logger that drops every line. logr.Discard() cannot serve where a
// zero klog.Logger means "the default logger" (informer.Options.Logger, controller.Options.Logger
// and a Manager's options read it so): it is that zero Logger. A Logger with a disabled sink is
// not, and costs no formatting.
package discard
