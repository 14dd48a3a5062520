package tasks

import "testing"

// A wait that ends without a change (an unknown graph, another runner's graph, a timeout)
// leaves no entry behind: the ids come from callers, so entries must not pile up.
func TestNotifier_ReleaseDropsEntry(t *testing.T) {
	n := newNotifier()
	_, r1 := n.watch("g-1")
	_, r2 := n.watch("g-1")
	r1()
	if len(n.chans) != 1 {
		t.Fatalf("entries after one of two waiters let go = %d, want 1", len(n.chans))
	}
	r2()
	if len(n.chans) != 0 {
		t.Fatalf("entries after every waiter let go = %d, want 0", len(n.chans))
	}
	ch, r3 := n.watch("g-1")
	n.fire("g-1")
	select {
	case <-ch:
	default:
		t.Fatal("fire did not close the channel of a waiting watcher")
	}
	r3() // after a fire: must not remove a newer entry
	_, r4 := n.watch("g-1")
	if len(n.chans) != 1 {
		t.Fatalf("entries with a new waiter = %d, want 1", len(n.chans))
	}
	r4()
}
