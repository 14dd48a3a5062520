package tasks

import "sync"

// notifier wakes waiters on a graph when its state changes. A waiter takes the graph's
// channel before it reads the state, then waits for the channel to close: a change
// committed after the read closes it, so no change is missed. Entries are counted and
// dropped when their last waiter lets go, so waits on ids that never change (an unknown
// graph, another runner's graph) leave nothing behind.
type notifier struct {
	mu     sync.Mutex
	chans  map[string]*watchers
	closed bool
}

type watchers struct {
	ch chan struct{}
	n  int // waiters holding ch
}

func newNotifier() *notifier { return &notifier{chans: map[string]*watchers{}} }

// watch returns a channel that is closed at the graph's next change (or at shutdown), and
// a release the waiter calls once it no longer waits on it.
func (n *notifier) watch(graphID string) (<-chan struct{}, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		ch := make(chan struct{})
		close(ch)
		return ch, func() {}
	}
	w, ok := n.chans[graphID]
	if !ok {
		w = &watchers{ch: make(chan struct{})}
		n.chans[graphID] = w
	}
	w.n++
	return w.ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if w.n--; w.n == 0 && n.chans[graphID] == w {
			delete(n.chans, graphID)
		}
	}
}

func (n *notifier) fire(graphID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w, ok := n.chans[graphID]; ok {
		close(w.ch)
		delete(n.chans, graphID)
	}
}

func (n *notifier) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, w := range n.chans {
		close(w.ch)
		delete(n.chans, id)
	}
	n.closed = true
}

// isClosed reports whether closeAll was called: every watch is closed from then on.
func (n *notifier) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}
