package tasks

import "context"

// loop is one of the engine's goroutines that run until the engine stops them (the
// watch for cancel requests and gone runners, the lease's renewal, the spooler), and
// owns the context it runs under.
//
// Stopping and waiting are apart because Engine.Close stops these loops first, before it
// stops the tasks, so that none starts new work during the shutdown, and waits for them
// only once every task has been reaped: the watch may still be carrying out a cancel
// request, which stops tasks and queues their states.
type loop struct {
	stop context.CancelFunc
	done chan struct{}
}

// startLoop runs run on a goroutine of its own until its context ends.
func startLoop(run func(ctx context.Context)) *loop {
	ctx, stop := context.WithCancel(context.Background())
	l := &loop{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		run(ctx)
	}()
	return l
}

// Stop ends the loop's context and returns at once. A nil loop (one never started) is
// stopped already.
func (l *loop) Stop() {
	if l != nil {
		l.stop()
	}
}

// Close stops the loop and waits for its goroutine to return.
func (l *loop) Close() {
	if l != nil {
		l.stop()
		<-l.done
	}
}
