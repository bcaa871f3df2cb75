// Package predicate filters informer events before they reach a controller:
// a Predicate[T] looks at each create, update and delete of a T and says
// whether the controller should hear of it. Give predicates to
// controller.Watch (or controller.Owns) with controller.WithPredicates;
// a predicate typed for another kind of object is a compile error there.
//
// The names and the behaviour follow controller-runtime's pkg/predicate, so
// users of controller-runtime find what they know, typed on T instead of
// client.Object; the differences are listed under "Porting from
// controller-runtime".
//
// # The standard use: do not reconcile your own status writes
//
// A controller that writes its primary object's status gets an update event
// for its own write, and with it a reconcile that has nothing to do. The API
// server bumps metadata.generation on spec changes only, so filtering the
// primary type's updates by generation drops the echo and keeps every
// change of intent:
//
//	controller.Watch(c, deployments, controller.EnqueueObject,
//		controller.WithPredicates(predicate.GenerationChanged[*appsv1.Deployment]()))
//
// Spend a moment on what that drops too (see GenerationChanged): status or
// metadata written by others, and resyncs. When labels or annotations carry
// intent, let them through with
// Or(GenerationChanged[T](), LabelsChanged[T](), AnnotationsChanged[T]()).
//
// # What each predicate does with each event
//
//	predicate                create        update                      delete
//	GenerationChanged        pass          generation differs          pass
//	ResourceVersionChanged   pass          not a resync                pass
//	LabelsChanged            pass          labels differ               pass
//	AnnotationsChanged       pass          annotations differ          pass
//	LabelSelector, Matching  object        old or new object           object, or missing object
//	  ...NewObject forms     object        new object                  object, or missing object
//	Funcs                    CreateFunc    UpdateFunc                  DeleteFunc (nil func: pass)
//
// Two rules explain the rest. First, a predicate that cannot judge lets the
// event through, because an extra reconcile of a level-triggered controller
// is harmless and a lost one is not: a delete seen only as a tombstone
// without its object (DeleteEvent's DeleteInfo.ObjectMissing) passes
// LabelSelector and Matching, and so does any event with a nil object.
// Second, an update is judged on both of its objects where it matters:
// controller.Watch enqueues the keys of both the old and the new object, and
// LabelSelector passes an update when either matches, so an object leaving
// the selection is seen once more (controller-runtime looks at the new
// object only, as do the NewObject forms).
//
// Deletes the informer inferred on relist (DeleteInfo.FinalStateUnknown)
// carry the last known, possibly stale object; predicates judge it as it is,
// which is the best knowledge there is.
//
// # Porting from controller-runtime
//
//	controller-runtime                    ctrlkit
//	GenerationChangedPredicate{}          GenerationChanged[T]()
//	ResourceVersionChangedPredicate{}     ResourceVersionChanged[T]()
//	LabelChangedPredicate{}               LabelsChanged[T]()
//	AnnotationChangedPredicate{}          AnnotationsChanged[T]()
//	LabelSelectorPredicate(s)             FromLabelSelectorNewObject[T](&s) (same semantics),
//	                                      FromLabelSelector[T](&s) (judges old and new)
//	NewPredicateFuncs(f)                  MatchingNewObject[T](f) (same semantics),
//	                                      Matching[T](f) (judges old and new)
//	Funcs{...}, And, Or, Not              Funcs[T]{...}, And, Or, Not
//	Funcs{GenericFunc: f}                 no equivalent: filter before Controller.Enqueue
//
// Which to choose between a selector or Matching and its NewObject form:
// LabelSelector and Matching pass an update when the old or the new object
// matches, so the update that takes an object out of the selection still
// reaches the controller, which can undo what it did for the object. The
// NewObject forms judge the new object only, as controller-runtime does, and
// drop that update: the controller does not hear that the object left until a
// resync or another watch brings its key. Port to the NewObject form to keep
// the behaviour exactly; prefer the plain form in new code.
//
// Other differences, all on the side of letting an event through, because an
// extra reconcile of a level-triggered controller is harmless and a lost one
// is not: an update with a nil old or new object passes the *Changed
// predicates (controller-runtime's log an error and drop it), and a delete
// whose object is missing passes every object-judging predicate. Informers
// never deliver such events; only hand-made ones have them.
//
// Generic events: controller-runtime's Predicate has a fourth method,
// Generic, which filters the events of source.Channel and other non-informer
// sources. ctrlkit has no generic events, hence no Generic method and no
// GenericFunc: something outside the cluster asks for a reconcile by calling
// the controller's Enqueue, EnqueueAfter or EnqueueWithTrigger with a key, and
// no predicate sees those keys. A GenericFunc being ported has no place to
// go; do its filtering in the code that calls Enqueue, or every key sent is
// reconciled. Conversely, predicates written for informer events need no
// Generic method to satisfy the interface.
//
// # Where filtering happens
//
// Predicates run on the informer's notification goroutine before the
// mapping: an update they refuse enqueues neither the old nor the new key.
// They filter what one controller hears, not what the shared cache holds;
// to cache fewer objects, scope the informer. Without predicates Watch adds
// no code at all to the event path.
//
// Validate finds nil predicates (also inside And, Or and Not) before an
// event does; controller.Watch calls it.
package predicate
