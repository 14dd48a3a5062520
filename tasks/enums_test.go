package tasks

import (
	"slices"
	"testing"
)

// The list functions adapters derive their enums from list every value once, in the
// documented order.
func TestEnumLists(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"Outcomes", names(Outcomes()), []string{"cancelled", "cancelling", "skipped", "already_terminal"}},
		{"States", names(States()), []string{"pending", "running", "succeeded", "failed", "cancelled", "skipped"}},
		{"GraphStates", names(GraphStates()), []string{"running", "succeeded", "failed", "cancelled"}},
		{"Untils", names(Untils()), []string{"done", "change"}},
		{"LogEventTypes", names(LogEventTypes()), []string{"log", "waiting", "started", "ended"}},
	} {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s() = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	// A caller may change what it got: the next call is whole again.
	States()[0] = "changed"
	if States()[0] != Pending {
		t.Errorf("States() shares its slice between calls")
	}
}

func names[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
