package adapter

import (
	"sync"
	"sync/atomic"
)

// Listeners is a set of callbacks an adapter calls: the deliver functions of
// Subscribe and the handlers of Events. Call runs every callback in order of
// registration; the function Add returns removes one and waits out a call in
// progress, so once it returns the callback is not running and is not called
// again. The zero value is empty and ready to use.
type Listeners[T any] struct {
	mu   sync.Mutex                     // serialises replacements of list
	list atomic.Pointer[[]*listener[T]] // replaced, never changed
}

type listener[T any] struct {
	fn  func(T)
	mu  sync.RWMutex // held for reading during a call
	off bool
}

// Add registers fn and returns the function that removes it; a second call
// of that function does nothing.
func (ls *Listeners[T]) Add(fn func(T)) (remove func()) {
	l := &listener[T]{fn: fn}
	ls.mu.Lock()
	var list []*listener[T]
	if p := ls.list.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, l)
	ls.list.Store(&list)
	ls.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { ls.remove(l) }) }
}

func (ls *Listeners[T]) remove(l *listener[T]) {
	ls.mu.Lock()
	var list []*listener[T]
	if p := ls.list.Load(); p != nil {
		for _, o := range *p {
			if o != l {
				list = append(list, o)
			}
		}
	}
	ls.list.Store(&list)
	ls.mu.Unlock()
	l.stop()
}

// RemoveAll removes every callback, waiting out calls in progress.
func (ls *Listeners[T]) RemoveAll() {
	ls.mu.Lock()
	p := ls.list.Swap(&[]*listener[T]{})
	ls.mu.Unlock()
	if p != nil {
		for _, l := range *p {
			l.stop()
		}
	}
}

// Call runs every registered callback with v.
func (ls *Listeners[T]) Call(v T) {
	p := ls.list.Load()
	if p == nil {
		return
	}
	for _, l := range *p {
		l.mu.RLock()
		if !l.off {
			l.fn(v)
		}
		l.mu.RUnlock()
	}
}

// stop waits out a call in progress and prevents the next.
func (l *listener[T]) stop() {
	l.mu.Lock()
	l.off = true
	l.mu.Unlock()
}
