// Package predicate filters informer events before they reach a controller:
// a Predicate[T] looks at each create, update and delete of a T and says
// whether the controller should hear of it. Give predicates to
// controller.Watch (or controller.Owns) with controller.WithPredicates;
// a predicate typed for another kind of object is a compile error there.
//
// The names and the behaviour follow controller-runtime's pkg/predicate, so
// users of controller-runtime find what they know, typed on T instead of
// client.Object:
//
//	controller-runtime                    ctrlkit
//	GenerationChangedPredicate{}          GenerationChanged[T]()
//	ResourceVersionChangedPredicate{}     ResourceVersionChanged[T]()
//	LabelChangedPredicate{}               LabelsChanged[T]()
//	AnnotationChangedPredicate{}          AnnotationsChanged[T]()
//	LabelSelectorPredicate(s)             FromLabelSelector[T](&s), LabelSelector[T](sel)
//	NewPredicateFuncs(f)                  Matching[T](f) (judges old and new on update)
//	Funcs{...}, And, Or, Not              Funcs[T]{...}, And, Or, Not
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
// object only).
//
// Deletes the informer inferred on relist (DeleteInfo.FinalStateUnknown)
// carry the last known, possibly stale object; predicates judge it as it is,
// which is the best knowledge there is.
//
// There are no generic events in ctrlkit, hence no Generic method.
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
