package protocol

import (
	"math"
	"runtime/debug"
	"testing"
)

// A big call lifts the server's soft memory limit for as long as it runs, and the limit
// comes back once the last of several overlapping big calls is through.
func TestBigCallsLiftTheMemoryLimit(t *testing.T) {
	if userMemoryLimit {
		t.Skip("GOMEMLIMIT is set: big calls keep the user's limit")
	}
	const serverLimit = 200 << 20
	old := debug.SetMemoryLimit(serverLimit)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	limit := func() int64 { return debug.SetMemoryLimit(-1) }

	bigCallBegins()
	if got := limit(); got != math.MaxInt64 {
		t.Fatalf("during a big call the limit is %d, want none", got)
	}
	bigCallBegins() // a second big call, overlapping
	bigCallEnds()
	if got := limit(); got != math.MaxInt64 {
		t.Fatalf("with one big call still running the limit is %d, want none", got)
	}
	bigCallEnds()
	if got := limit(); got != serverLimit {
		t.Fatalf("after the big calls the limit is %d, want the server's %d back", got, serverLimit)
	}
}
