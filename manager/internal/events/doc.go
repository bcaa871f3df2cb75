// Package events is a Manager's event recording: one broadcaster per Event
// API (events.k8s.io/v1 through client-go's tools/events, core/v1 through
// tools/record), each started on its first event while the Manager runs,
// and the recorders that forward to them by name.
//
// Events flow between Start and Stop; an event recorded before or after is
// dropped and logged at V(2). Stop shuts the broadcasters down and waits for
// the events.k8s.io writes in flight, so no write to the API server outlives
// the Manager. The events.k8s.io sink stamps every Event with the Manager's
// identity as reportingInstance (Instance), which client-go's recorder
// would otherwise fix to "<reportingController>-<hostname>".
package events
