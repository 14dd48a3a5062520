package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"testing"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// An error crosses with its message and the kinds the engine and the buckets test for;
// a kind it did not have does not hold of it here.
func TestWireError_KeepsKinds(t *testing.T) {
	kinds := []error{tasks.ErrExecutorUnavailable, tasks.ErrUnknownAttempt, fs.ErrNotExist, context.Canceled, context.DeadlineExceeded}
	for _, kind := range kinds {
		err := fmt.Errorf("the call: %w", kind)
		var got *WireError
		data, _ := json.Marshal(ErrorOf(err))
		if e := json.Unmarshal(data, &got); e != nil {
			t.Fatal(e)
		}
		if got.Error() != err.Error() {
			t.Errorf("message %q, want %q", got.Error(), err.Error())
		}
		for _, other := range kinds {
			if errors.Is(got, other) != (other == kind) {
				t.Errorf("%v crossed: errors.Is(it, %v) = %v", kind, other, errors.Is(got, other))
			}
		}
	}
	if ErrorOf(nil) != nil {
		t.Error("ErrorOf(nil) is not nil")
	}
}

// A status crosses whole, its log fault as words.
func TestRunStatus_Crosses(t *testing.T) {
	code := 3
	st := tasks.RunStatus{ID: tasks.AttemptID{Workspace: "w", GraphID: "g", TaskID: "t", Attempt: 2}, Phase: tasks.PhaseEnded,
		Placement: tasks.Placement{Job: "j", Pod: "p", Node: "n"}, ExitCode: &code, Signal: "SIGKILL", Code: tasks.CodeNodeLost,
		Message: "m", Cancelled: true, LogFault: errors.New("disk full")}
	data, err := json.Marshal(StatusOf(st))
	if err != nil {
		t.Fatal(err)
	}
	var w RunStatus
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	got := w.Task()
	if got.LogFault == nil || got.LogFault.Error() != "disk full" {
		t.Errorf("log fault %v, want disk full", got.LogFault)
	}
	got.LogFault, st.LogFault = nil, nil
	if !reflect.DeepEqual(got, st) {
		t.Errorf("crossed as %+v, want %+v", got, st)
	}
}
