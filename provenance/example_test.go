package provenance_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// A key's Reasons merge every trigger that queued it, at a fixed size: counts
// per kind, and the first and last trigger in full.
func ExampleReasons() {
	var why provenance.Reasons
	why.Record(provenance.Trigger{Kind: provenance.TriggerEvent, Event: provenance.EventUpdate, Source: "pods", Namespace: "default", Name: "web-1"})
	why.Record(provenance.Trigger{Kind: provenance.TriggerRetry, Retry: 1})
	fmt.Println(why.Count(provenance.TriggerRetry), why.Last)
	fmt.Println(why)
	// Output:
	// 1 retry#1
	// 2 triggers (event=1 retry=1); first: event:update pods default/web-1; last: retry#1
}
