package tasks

import "sync"

// notifier wakes waiters on a graph when its state changes. A waiter takes the graph's
// channel before it reads the state, then waits for the channel to close: a change
// committed after the read closes it, so no change is missed.
type notifier struct {
	mu     sync.Mutex
	chans  map[string]chan struct{}
	closed bool
}

func newNotifier() *notifier { return &notifier{chans: map[string]chan struct{}{}} }

// watch returns a channel that is closed at the graph's next change (or at shutdown).
func (n *notifier) watch(graphID string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	ch, ok := n.chans[graphID]
	if !ok {
		ch = make(chan struct{})
		n.chans[graphID] = ch
	}
	return ch
}

func (n *notifier) fire(graphID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.chans[graphID]; ok {
		close(ch)
		delete(n.chans, graphID)
	}
}

func (n *notifier) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, ch := range n.chans {
		close(ch)
		delete(n.chans, id)
	}
	n.closed = true
}
