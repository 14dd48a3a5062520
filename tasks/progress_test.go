package tasks

import "testing"

// Count reads back what add counted, for every state, and add (once per task in
// ProgressOf) allocates nothing.
func TestProgress_Count(t *testing.T) {
	var p Progress
	for i, s := range States() {
		p.add(s, i+1)
	}
	for i, s := range States() {
		if got := p.Count(s); got != i+1 {
			t.Errorf("Count(%s) = %d, want %d", s, got, i+1)
		}
	}
	if want := len(States()) * (len(States()) + 1) / 2; p.Total != want {
		t.Errorf("Total = %d, want %d", p.Total, want)
	}
	if got := p.Count("no-such-state"); got != 0 {
		t.Errorf("Count of an unknown state = %d, want 0", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { p.add(Running, 1) }); allocs != 0 {
		t.Errorf("add allocates %v times a call, want none", allocs)
	}
}
