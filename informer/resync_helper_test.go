package informer

// withoutResync wraps h so that resync updates (IsResync) do not reach it.
func withoutResync[T Object](h Handler[T]) Handler[T] {
	return resyncFilter[T]{h}
}

type resyncFilter[T Object] struct{ Handler[T] }

func (r resyncFilter[T]) HandleUpdate(oldObj, newObj T) {
	if IsResync(oldObj, newObj) {
		return
	}
	r.Handler.HandleUpdate(oldObj, newObj)
}

func (r resyncFilter[T]) validate() error { return validateHandler(r.Handler) }
