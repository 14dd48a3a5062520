package dag

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// errOutsideTest stands for the workspace's "outside the workspace" sentinel, which this
// package must pass through untouched.
var errOutsideTest = errors.New("outside the workspace")

// vConfine resolves cwds under /ws and refuses any that starts with "..", as the real
// workspace confinement would.
func vConfine(cwd string) (string, error) {
	if strings.HasPrefix(cwd, "..") {
		return "", fmt.Errorf("cwd %q: %w /ws", cwd, errOutsideTest)
	}
	if filepath.IsAbs(cwd) {
		return filepath.Clean(cwd), nil
	}
	return filepath.Join("/ws", cwd), nil
}

// vTask is a task that runs "true" after deps.
func vTask(id string, deps ...string) TaskSpec {
	return TaskSpec{ID: id, Command: "true", DependsOn: deps}
}

// vSpec is a graph of tasks.
func vSpec(tasks ...TaskSpec) Spec { return Spec{Tasks: tasks} }

// with returns t changed by f, to write table cases as one expression.
func with(t TaskSpec, f func(*TaskSpec)) TaskSpec {
	f(&t)
	return t
}

// errorKinds are the kinds a refused graph may have; each error has exactly one.
var errorKinds = []error{ErrInvalid, ErrCycle, ErrUnknownDependency, ErrDuplicateTask, ErrLimit, errOutsideTest}

func kindOf(err error) []error {
	var kinds []error
	for _, k := range errorKinds {
		if errors.Is(err, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// manyTasks is n independent tasks t0, t1...
// envOf is n variables V0..V(n-1) of size bytes each.
func envOf(n, size int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env["V"+strconv.Itoa(i)] = strings.Repeat("v", size)
	}
	return env
}

func manyTasks(n int) []TaskSpec {
	ts := make([]TaskSpec, n)
	for i := range ts {
		ts[i] = vTask("t" + strconv.Itoa(i))
	}
	return ts
}

// validateErrorCases are graphs Validate refuses, one per rule. They also seed FuzzValidate.
var validateErrorCases = []struct {
	name string
	spec Spec
	lim  Limits
	want error    // the kind
	msg  []string // substrings of the message: the culprit, and what to do
}{
	{name: "NoTasks", spec: Spec{}, want: ErrInvalid, msg: []string{"tasks is empty", "at least one task"}},
	{name: "TooManyTasks", spec: vSpec(manyTasks(3)...), lim: Limits{MaxTasks: 2},
		want: ErrLimit, msg: []string{"3 tasks", "at most 2", "split"}},
	{name: "TooManyTasksDefault", spec: vSpec(manyTasks(DefaultMaxTasks + 1)...),
		want: ErrLimit, msg: []string{"10001 tasks", "at most 10000"}},
	{name: "NameTooLong", spec: Spec{Name: strings.Repeat("n", MaxNameBytes+1), Tasks: []TaskSpec{vTask("a")}},
		want: ErrLimit, msg: []string{"name is 201 bytes", "at most 200", "shorten"}},
	{name: "MaxParallelNegative", spec: Spec{MaxParallel: -1, Tasks: []TaskSpec{vTask("a")}},
		want: ErrInvalid, msg: []string{"maxParallel is -1", "0 for the default"}},
	{name: "MaxParallelAboveCap", spec: Spec{MaxParallel: 9, Tasks: []TaskSpec{vTask("a")}}, lim: Limits{MaxParallel: 8},
		want: ErrLimit, msg: []string{"maxParallel is 9", "at most 8"}},
	{name: "IDEmpty", spec: vSpec(vTask("a"), vTask("")),
		want: ErrInvalid, msg: []string{"tasks[1] has no id", "letters, digits"}},
	{name: "IDStartsWithDot", spec: vSpec(vTask(".a")),
		want: ErrInvalid, msg: []string{"tasks[0]", `".a" starts with '.'`}},
	{name: "IDHasSpace", spec: vSpec(vTask("a"), vTask("b"), vTask("my task")),
		want: ErrInvalid, msg: []string{"tasks[2]", `"my task" contains ' '`}},
	{name: "IDHasSlash", spec: vSpec(vTask("a/b")), want: ErrInvalid, msg: []string{"tasks[0]", "contains '/'"}},
	{name: "IDNonASCII", spec: vSpec(vTask("tâche")), want: ErrInvalid, msg: []string{"tasks[0]", `"tâche" contains 'â'`}},
	{name: "IDTooLong", spec: vSpec(vTask(strings.Repeat("x", 65))),
		want: ErrInvalid, msg: []string{"tasks[0]", "65 bytes long", "1 to 64"}},
	{name: "IDDuplicate", spec: vSpec(vTask("build"), vTask("test"), vTask("build")),
		want: ErrDuplicateTask, msg: []string{`"build"`, "tasks[0] and tasks[2]", "unique"}},
	{name: "CommandEmpty", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Command = "" })),
		want: ErrInvalid, msg: []string{`task "a" has no command`}},
	{name: "CommandBlank", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Command = " \t\n" })),
		want: ErrInvalid, msg: []string{`task "a"`, "blank"}},
	{name: "CommandTooLong", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Command = strings.Repeat("x", MaxCommandBytes+1) })),
		want: ErrLimit, msg: []string{`task "a"`, "131072 bytes", "at most 131071", "file"}},
	{name: "CommandNUL", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Command = "echo a\x00b" })),
		want: ErrInvalid, msg: []string{`task "a"`, "NUL byte at offset 6"}},
	{name: "TimeoutNegative", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.TimeoutSec = -1 })),
		want: ErrInvalid, msg: []string{`task "a"`, "timeoutSec is -1", "0 for no timeout"}},
	{name: "TimeoutTooLong", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.TimeoutSec = 604801 })),
		want: ErrLimit, msg: []string{`task "a"`, "timeoutSec is 604801", "at most 604800 (7 days)"}},
	{name: "RetriesNegative", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Retries = -2 })),
		want: ErrInvalid, msg: []string{`task "a"`, "retries is -2"}},
	{name: "RetriesTooMany", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Retries = MaxRetries + 1 })),
		want: ErrLimit, msg: []string{`task "a"`, "retries is 101", "at most 100"}},
	{name: "EnvEmptyName", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Env = map[string]string{"": "x"} })),
		want: ErrInvalid, msg: []string{`task "a"`, "empty name"}},
	{name: "EnvNameHasEquals", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Env = map[string]string{"A=B": "x"} })),
		want: ErrInvalid, msg: []string{`task "a"`, `env "A=B"`, "'='"}},
	{name: "EnvNameNUL", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Env = map[string]string{"A\x00": "x"} })),
		want: ErrInvalid, msg: []string{`task "a"`, "NUL byte in its name"}},
	{name: "EnvValueNUL", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Env = map[string]string{"OK": "1", "A": "x\x00"} })),
		want: ErrInvalid, msg: []string{`task "a"`, `env "A"`, "NUL byte in its value"}},
	{name: "EnvSmallestBadNameFirst", spec: vSpec(with(vTask("a"), func(t *TaskSpec) {
		t.Env = map[string]string{"Z=": "", "B=": "", "M=": "", "C": "ok"}
	})), want: ErrInvalid, msg: []string{`env "B="`}},
	{name: "CwdNUL", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Cwd = "a\x00" })),
		want: ErrInvalid, msg: []string{`task "a"`, "cwd has a NUL byte"}},
	{name: "EnvTooMany", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Env = envOf(MaxEnvVars+1, 1) })),
		want: ErrLimit, msg: []string{`task "a"`, "env has 101 variables", "at most 100"}},
	{name: "EnvValueTooLong", spec: vSpec(with(vTask("a"), func(t *TaskSpec) {
		t.Env = map[string]string{"OK": "1", "BIG": strings.Repeat("v", MaxEnvValueBytes+1)}
	})), want: ErrLimit, msg: []string{`task "a"`, `env "BIG" is 32769 bytes long`, "at most 32768"}},
	{name: "EnvTooBig", spec: vSpec(with(vTask("a"), func(t *TaskSpec) { t.Env = envOf(5, MaxEnvValueBytes) })),
		want: ErrLimit, msg: []string{`task "a"`, "env is 163850 bytes", "at most 131072"}},
	{name: "IdempotencyKeyTooLong", spec: Spec{IdempotencyKey: strings.Repeat("k", 1<<20), Tasks: []TaskSpec{vTask("a")}},
		want: ErrLimit, msg: []string{"idempotencyKey is 1048576 bytes", "at most 200"}},
	{name: "UnknownDependency", spec: vSpec(vTask("build"), vTask("test", "biuld")),
		want: ErrUnknownDependency, msg: []string{`task "test" depends on "biuld"`, `did you mean "build"`}},
	{name: "UnknownDependencyNoSuggestion", spec: vSpec(vTask("build"), vTask("test", "deploy")),
		want: ErrUnknownDependency, msg: []string{`task "test" depends on "deploy"`, "same graph"}},
	{name: "UnknownDependencyHuge", spec: vSpec(vTask("a", strings.Repeat("d", 1<<20))),
		want: ErrUnknownDependency, msg: []string{`task "a" depends on "dddd`, `"... (1048576 bytes), which is not a task`}},
	{name: "IDHuge", spec: vSpec(vTask(strings.Repeat("x", 1<<20))),
		want: ErrInvalid, msg: []string{"tasks[0]", `"... (1048576 bytes) is 1048576 bytes long`}},
	{name: "UnknownDependencyEmpty", spec: vSpec(vTask("a", "")),
		want: ErrUnknownDependency, msg: []string{`task "a" depends on ""`}},
	{name: "DuplicateDependency", spec: vSpec(vTask("a"), vTask("b", "a", "a")),
		want: ErrInvalid, msg: []string{`task "b" lists "a" twice`, "once"}},
	{name: "SelfDependency", spec: vSpec(vTask("a"), vTask("b", "a", "b")),
		want: ErrCycle, msg: []string{"tasks form a cycle: b -> b", `remove "b" from its dependsOn`}},
	{name: "Cycle", spec: vSpec(vTask("build", "test"), vTask("test", "build")),
		want: ErrCycle, msg: []string{"tasks form a cycle: build -> test -> build", "remove one"}},
	{name: "CycleBehindRoot", spec: vSpec(vTask("a"), vTask("b", "a", "d"), vTask("c", "b"), vTask("d", "c")),
		want: ErrCycle, msg: []string{"b -> d -> c -> b"}},
	{name: "UnknownBeforeCycle", spec: vSpec(vTask("a", "b"), vTask("b", "a"), vTask("c", "nope")),
		want: ErrUnknownDependency, msg: []string{`"nope"`}},
	{name: "FieldsBeforeDependencies", spec: vSpec(vTask("a", "nope"), with(vTask("b"), func(t *TaskSpec) { t.Command = "" })),
		want: ErrInvalid, msg: []string{`task "b" has no command`}},
	{name: "CwdOutside", spec: vSpec(vTask("a"), with(vTask("b"), func(t *TaskSpec) { t.Cwd = "../etc" })),
		want: errOutsideTest, msg: []string{`task "b": cwd "../etc": outside the workspace`}},
	{name: "CycleBeforeCwd", spec: vSpec(with(vTask("a", "a"), func(t *TaskSpec) { t.Cwd = "../x" })),
		want: ErrCycle, msg: []string{"a -> a"}},
}

func TestValidate_Errors(t *testing.T) {
	for _, tt := range validateErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(tt.spec, tt.lim, vConfine)
			if err == nil {
				t.Fatalf("Validate() = nil error, want %v", tt.want)
			}
			if kinds := kindOf(err); len(kinds) != 1 || kinds[0] != tt.want {
				t.Fatalf("Validate() = %v, of kinds %v; want exactly %v", err, kinds, tt.want)
			}
			for _, s := range tt.msg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Validate() = %q, want it to contain %q", err, s)
				}
			}
			// What was sent is quoted short, however long it was.
			if n := len(err.Error()); n > 1000 {
				t.Errorf("Validate() = a message of %d bytes, want at most 1000", n)
			}
		})
	}
}

func TestValidate_TypedErrors(t *testing.T) {
	_, err := Validate(vSpec(vTask("build"), vTask("test"), vTask("build")), Limits{}, vConfine)
	var dup *DuplicateTaskError
	if !errors.As(err, &dup) || *dup != (DuplicateTaskError{ID: "build", First: 0, Second: 2}) {
		t.Errorf("Validate(duplicate) = %#v, want *DuplicateTaskError{build 0 2}", err)
	}

	_, err = Validate(vSpec(vTask("Build"), vTask("lint"), vTask("test", "lint", "buidl")), Limits{}, vConfine)
	var unk *UnknownDependencyError
	want := UnknownDependencyError{Task: "test", Dependency: "buidl", Closest: []string{"Build"}}
	if !errors.As(err, &unk) || !cmp.Equal(*unk, want) {
		t.Errorf("Validate(unknown) = %#v, want %#v", err, want)
	}

	_, err = Validate(vSpec(vTask("a", "b"), vTask("b", "c"), vTask("c", "a")), Limits{}, vConfine)
	var cyc *CycleError
	if !errors.As(err, &cyc) || !slices.Equal(cyc.Path, []string{"a", "b", "c", "a"}) {
		t.Errorf("Validate(cycle) = %#v, want *CycleError{[a b c a]}", err)
	}
}

func TestClosestIDs(t *testing.T) {
	tasks := []TaskSpec{vTask("build"), vTask("built"), vTask("test"), vTask("unit-tests"), vTask("BUILD2")}
	for _, tt := range []struct {
		dep  string
		want []string
	}{
		{"biuld", []string{"build"}},                     // swapped letters: one edit
		{"buildd", []string{"build", "BUILD2", "built"}}, // nearest first, ties in submitted order
		{"Test", []string{"test"}},                       // case alone is no difference
		{"unit-test", []string{"unit-tests"}},
		{"deploy", nil},
		{"", nil},
		{strings.Repeat("b", 200), nil},
	} {
		if got := closestIDs(tt.dep, tasks); !slices.Equal(got, tt.want) {
			t.Errorf("closestIDs(%q) = %q, want %q", tt.dep, got, tt.want)
		}
	}
}

func TestValidate_OK(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spec  Spec
		lim   Limits
		order []int
		dirs  []string
	}{
		{name: "One", spec: vSpec(vTask("a")), order: []int{0}, dirs: []string{"/ws"}},
		{name: "Independent", spec: vSpec(vTask("c"), vTask("a"), vTask("b")), order: []int{0, 1, 2}},
		{name: "SortedChain", spec: vSpec(vTask("a"), vTask("b", "a"), vTask("c", "b")), order: []int{0, 1, 2}},
		{name: "ReversedChain", spec: vSpec(vTask("c", "b"), vTask("b", "a"), vTask("a")), order: []int{2, 1, 0}},
		{name: "Diamond", spec: vSpec(vTask("a"), vTask("b", "a"), vTask("c", "a"), vTask("d", "b", "c")), order: []int{0, 1, 2, 3}},
		{name: "DiamondDependenciesFirst", spec: vSpec(vTask("d", "c", "b"), vTask("b", "a"), vTask("c", "a"), vTask("a")),
			order: []int{3, 2, 1, 0}},
		{name: "PulledForward", spec: vSpec(vTask("x", "z"), vTask("y"), vTask("z")), order: []int{2, 0, 1}},
		{name: "Cwds", spec: vSpec(
			with(vTask("a"), func(t *TaskSpec) { t.Cwd = "web" }),
			with(vTask("b"), func(t *TaskSpec) { t.Cwd = "" }),
			with(vTask("c"), func(t *TaskSpec) { t.Cwd = "/ws/api" })),
			order: []int{0, 1, 2}, dirs: []string{"/ws/web", "/ws", "/ws/api"}},
		{name: "Bounds", spec: Spec{
			Name:        strings.Repeat("n", MaxNameBytes),
			MaxParallel: 8,
			Tasks: []TaskSpec{with(vTask(strings.Repeat("x", 64)), func(t *TaskSpec) {
				t.Command = strings.Repeat(" ", MaxCommandBytes-1) + "x"
				t.TimeoutSec = int(MaxTimeout / time.Second)
				t.Retries = MaxRetries
				t.Env = map[string]string{"A": "", "B_2": "x=y"}
			}), vTask("Z9._-", strings.Repeat("x", 64))},
		}, lim: Limits{MaxParallel: 8, MaxTasks: 2}, order: []int{0, 1}},
		{name: "MaxParallelWithoutCap", spec: Spec{MaxParallel: 1000, Tasks: []TaskSpec{vTask("a")}}, order: []int{0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Validate(tt.spec, tt.lim, vConfine)
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if !slices.Equal(v.Order, tt.order) {
				t.Errorf("Validate().Order = %v, want %v", v.Order, tt.order)
			}
			if tt.dirs == nil {
				for range tt.spec.Tasks {
					tt.dirs = append(tt.dirs, "/ws")
				}
			}
			if !slices.Equal(v.Dirs, tt.dirs) {
				t.Errorf("Validate().Dirs = %q, want %q", v.Dirs, tt.dirs)
			}
			if diff := cmp.Diff(tt.spec, v.Spec); diff != "" {
				t.Errorf("Validate().Spec differs from the spec given (-want +got):\n%s", diff)
			}
			checkOrder(t, tt.spec, v.Order)
		})
	}
}

func TestValidate_ConfineOncePerCwd(t *testing.T) {
	spec := vSpec(manyTasks(DefaultMaxTasks)...)
	for i := range spec.Tasks {
		spec.Tasks[i].Cwd = []string{"src", "", "src/x"}[i%3]
	}
	calls := map[string]int{}
	v, err := Validate(spec, Limits{}, func(cwd string) (string, error) {
		calls[cwd]++
		return vConfine(cwd)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"src": 1, "": 1, "src/x": 1}; !cmp.Equal(calls, want) {
		t.Errorf("confine calls = %v, want %v", calls, want)
	}
	if v.Dirs[3] != "/ws/src" || v.Dirs[4] != "/ws" || v.Dirs[5] != "/ws/src/x" {
		t.Errorf("Dirs[3:6] = %q, want [/ws/src /ws /ws/src/x]", v.Dirs[3:6])
	}
}

func TestValidate_ConfineError(t *testing.T) {
	spec := vSpec(vTask("a"), with(vTask("b"), func(t *TaskSpec) { t.Cwd = "../x" }), with(vTask("c"), func(t *TaskSpec) { t.Cwd = "../x" }))
	_, err := Validate(spec, Limits{}, vConfine)
	if !errors.Is(err, errOutsideTest) {
		t.Fatalf("Validate() = %v, want it to wrap the confine error", err)
	}
	if want := `task "b": cwd "../x": outside the workspace /ws`; err.Error() != want {
		t.Errorf("Validate() = %q, want %q", err, want)
	}
}

func TestValidate_RefusalTouchesNoFiles(t *testing.T) {
	spec := vSpec(with(vTask("a", "b"), func(t *TaskSpec) { t.Cwd = "x" }), vTask("b", "a"))
	_, err := Validate(spec, Limits{}, func(cwd string) (string, error) {
		t.Errorf("confine(%q) called for a graph refused on its own", cwd)
		return vConfine(cwd)
	})
	if !errors.Is(err, ErrCycle) {
		t.Errorf("Validate() = %v, want a cycle", err)
	}
}

func TestValidate_BadConfine(t *testing.T) {
	for _, tt := range []struct {
		name    string
		confine func(string) (string, error)
	}{
		{"Nil", nil},
		{"Relative", func(cwd string) (string, error) { return "rel", nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(vSpec(vTask("a")), Limits{}, tt.confine)
			if err == nil || len(kindOf(err)) != 0 {
				t.Errorf("Validate() = %v, want an internal error of no input kind", err)
			}
		})
	}
}

func TestValidate_CyclePaths(t *testing.T) {
	longCycle := manyTasks(DefaultMaxTasks)
	for i := range longCycle {
		// t0 depends on t9999, t1 on t0...: the walk goes 10,000 deep before closing it.
		longCycle[i].DependsOn = []string{"t" + strconv.Itoa((i+len(longCycle)-1)%len(longCycle))}
	}
	for _, tt := range []struct {
		name string
		spec Spec
		len  int // of the path, 0 for any
	}{
		{"Self", vSpec(vTask("a", "a")), 2},
		{"Two", vSpec(vTask("a", "b"), vTask("b", "a")), 3},
		{"TailIntoCycle", vSpec(vTask("x", "a"), vTask("a", "b"), vTask("b", "c"), vTask("c", "a")), 4},
		{"TwoCycles", vSpec(vTask("a", "b"), vTask("b", "a"), vTask("c", "d"), vTask("d", "c")), 3},
		{"DAGPlusBackEdge", vSpec(vTask("a", "d"), vTask("b", "a"), vTask("c", "a", "b"), vTask("d", "c", "b")), 0},
		{"Long", vSpec(longCycle...), DefaultMaxTasks + 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(tt.spec, Limits{}, vConfine)
			var cyc *CycleError
			if !errors.As(err, &cyc) {
				t.Fatalf("Validate() = %v, want a *CycleError", err)
			}
			if err := checkCycle(tt.spec, cyc.Path); err != nil {
				t.Errorf("Validate() path %v: %v", clipPath(cyc.Path), err)
			}
			if tt.len != 0 && len(cyc.Path) != tt.len {
				t.Errorf("Validate() path %v has %d elements, want %d", clipPath(cyc.Path), len(cyc.Path), tt.len)
			}
		})
	}
}

func clipPath(p []string) []string {
	if len(p) > 10 {
		return append(slices.Clip(p[:5]), "...", p[len(p)-1])
	}
	return p
}

// checkCycle reports whether path is a simple cycle of spec: first == last, every element
// depends on the next, and no task appears twice but the first.
func checkCycle(spec Spec, path []string) error {
	if len(path) < 2 || path[0] != path[len(path)-1] {
		return fmt.Errorf("not closed: first and last differ")
	}
	byID := map[string]*TaskSpec{}
	for i := range spec.Tasks {
		byID[spec.Tasks[i].ID] = &spec.Tasks[i]
	}
	seen := map[string]bool{}
	for k := 0; k+1 < len(path); k++ {
		t := byID[path[k]]
		if t == nil {
			return fmt.Errorf("%q is not a task", path[k])
		}
		if seen[path[k]] {
			return fmt.Errorf("%q appears twice", path[k])
		}
		seen[path[k]] = true
		if !slices.Contains(t.DependsOn, path[k+1]) {
			return fmt.Errorf("%q does not depend on %q", path[k], path[k+1])
		}
	}
	return nil
}

// checkOrder fails t unless order holds every task index once, each after its dependencies.
func checkOrder(t testing.TB, spec Spec, order []int) {
	t.Helper()
	if err := orderError(spec, order); err != nil {
		t.Errorf("order %v: %v", order[:min(len(order), 20)], err)
	}
}

func orderError(spec Spec, order []int) error {
	if len(order) != len(spec.Tasks) {
		return fmt.Errorf("%d elements for %d tasks", len(order), len(spec.Tasks))
	}
	pos := map[string]int{}
	for k, i := range order {
		if i < 0 || i >= len(spec.Tasks) {
			return fmt.Errorf("index %d out of range", i)
		}
		if _, dup := pos[spec.Tasks[i].ID]; dup {
			return fmt.Errorf("task %d twice", i)
		}
		pos[spec.Tasks[i].ID] = k
	}
	for _, i := range order {
		for _, d := range spec.Tasks[i].DependsOn {
			if pos[d] >= pos[spec.Tasks[i].ID] {
				return fmt.Errorf("%q comes before its dependency %q", spec.Tasks[i].ID, d)
			}
		}
	}
	return nil
}
