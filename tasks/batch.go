package tasks

import "sync"

// batchQueue is an unbounded queue that one goroutine drains a batch at a time: push never
// blocks (the engine queues with e.mu held, so it must not wait on the drainer), and take
// hands over everything queued so far at once, so the drainer pays its cost (a
// transaction) once per batch, not once per item. The writer's queue is one.
type batchQueue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	ready  chan struct{} // holds a token while there is something to take
}

func newBatchQueue[T any]() batchQueue[T] { return batchQueue[T]{ready: make(chan struct{}, 1)} }

func (q *batchQueue[T]) push(it T) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.signal()
}

// close says nothing more will be pushed; the drainer ends once take reports it closed
// and hands over nothing.
func (q *batchQueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *batchQueue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns everything queued so far, and whether the queue is closed.
func (q *batchQueue[T]) take() ([]T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items, q.closed
}

// wait blocks until something was pushed or the queue closed since the last take.
func (q *batchQueue[T]) wait() { <-q.ready }
