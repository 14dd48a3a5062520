package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// layeredTasks is a random DAG of n tasks in layers of 100, each task past the first layer
// depending on 3 distinct tasks of earlier layers, submitted in shuffled order when
// shuffle is set (so the walk has to pull dependencies forward).
func layeredTasks(n int, seed uint64, shuffle bool) []TaskSpec {
	r := rand.New(rand.NewPCG(seed, 1))
	const width = 100
	ts := make([]TaskSpec, n)
	for i := range ts {
		ts[i] = TaskSpec{ID: fmt.Sprintf("t%05d", i), Command: "make -C pkg" + strconv.Itoa(i), Cwd: "src"}
		if layer := i / width; layer > 0 {
			for len(ts[i].DependsOn) < 3 {
				dep := ts[r.IntN(layer*width)].ID
				if !slices.Contains(ts[i].DependsOn, dep) {
					ts[i].DependsOn = append(ts[i].DependsOn, dep)
				}
			}
		}
	}
	if shuffle {
		r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	}
	return ts
}

func TestValidate_Large(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tasks []TaskSpec
	}{
		{"Layered", layeredTasks(DefaultMaxTasks, 1, false)},
		{"LayeredShuffled", layeredTasks(DefaultMaxTasks, 2, true)},
		{"ReversedChain", func() []TaskSpec {
			ts := manyTasks(DefaultMaxTasks)
			for i := range len(ts) - 1 {
				ts[i].DependsOn = []string{ts[i+1].ID} // t0 needs t1... needs t9999: 10,000 deep
			}
			return ts
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := vSpec(tt.tasks...)
			v, err := Validate(spec, Limits{}, vConfine)
			if err != nil {
				t.Fatal(err)
			}
			checkOrder(t, spec, v.Order)
		})
	}
}

// TestValidate_Cheap checks that validating a large graph stays linear.
func TestValidate_Cheap(t *testing.T) {
	checkCheap(t, func(n int) func() {
		spec := vSpec(layeredTasks(n, 3, true)...)
		return func() {
			if _, err := Validate(spec, Limits{MaxTasks: n}, vConfine); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// checkCheap fails t when the function prepare(n) returns, run on a graph of n items,
// allocates per item: one allocation per 100 items at most (the map of ids grows by table),
// the rest being a fixed number of arrays. Allocation counts are deterministic where
// timings on a shared machine are not; the benchmarks give the times.
func checkCheap(t *testing.T, prepare func(n int) func()) {
	t.Helper()
	if testing.Short() {
		t.Skip("large graphs")
	}
	const small, large = 2500, 10000
	run := prepare(large)
	a1, a2 := testing.AllocsPerRun(1, prepare(small)), testing.AllocsPerRun(1, run)
	if extra := a2 - a1; extra > (large-small)/100 {
		t.Errorf("%d items cost %.0f allocations, %d cost %.0f: %.0f more, want at most %d",
			small, a1, large, a2, extra, (large-small)/100)
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		spec := vSpec(layeredTasks(n, 4, true)...)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(spec, Limits{}, vConfine); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Fuzzing. A spec travels as text so that the table cases can seed the corpus: records
// split by \x1e, the first holding the graph's name and maxParallel, each other a task;
// fields split by \x1f (id, command, dependsOn split by spaces, cwd, timeoutSec, retries,
// env); env entries split by \x1d, each name=value.

const (
	fuzzRecord = "\x1e"
	fuzzField  = "\x1f"
	fuzzEnv    = "\x1d"
)

func encodeSpec(s Spec) string {
	recs := []string{s.Name + fuzzField + strconv.Itoa(s.MaxParallel)}
	for _, t := range s.Tasks {
		var env []string
		for k, v := range t.Env {
			env = append(env, k+"="+v)
		}
		slices.Sort(env)
		recs = append(recs, strings.Join([]string{t.ID, t.Command, strings.Join(t.DependsOn, " "), t.Cwd,
			strconv.Itoa(t.TimeoutSec), strconv.Itoa(t.Retries), strings.Join(env, fuzzEnv)}, fuzzField))
	}
	return strings.Join(recs, fuzzRecord)
}

func decodeSpec(text string) Spec {
	recs := strings.Split(text, fuzzRecord)
	head := strings.Split(recs[0], fuzzField)
	s := Spec{Name: head[0]}
	if len(head) > 1 {
		s.MaxParallel, _ = strconv.Atoi(head[1])
	}
	for _, rec := range recs[1:] {
		f := strings.Split(rec, fuzzField)
		f = append(f, make([]string, 7)...)
		t := TaskSpec{ID: f[0], Command: f[1], DependsOn: strings.Fields(f[2]), Cwd: f[3]}
		t.TimeoutSec, _ = strconv.Atoi(f[4])
		t.Retries, _ = strconv.Atoi(f[5])
		if f[6] != "" {
			t.Env = map[string]string{}
			for _, kv := range strings.Split(f[6], fuzzEnv) {
				k, v, _ := strings.Cut(kv, "=")
				t.Env[k] = v
			}
		}
		s.Tasks = append(s.Tasks, t)
	}
	return s
}

var fuzzLimits = Limits{MaxTasks: 40, MaxParallel: 16}

// oracleValidID is the id rule as the design states it, as an independent check on checkID.
var oracleValidID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// oracleRefusedAlone reports whether spec breaks a rule that needs no cycle search and no
// file system, each rule written as plainly as possible.
func oracleRefusedAlone(s Spec, lim Limits) bool {
	maxTasks := lim.MaxTasks
	if maxTasks <= 0 {
		maxTasks = DefaultMaxTasks
	}
	if len(s.Tasks) == 0 || len(s.Tasks) > maxTasks || len(s.Name) > MaxNameBytes || s.MaxParallel < 0 ||
		len(s.IdempotencyKey) > MaxIdempotencyKeyBytes ||
		(lim.MaxParallel > 0 && s.MaxParallel > lim.MaxParallel) {
		return true
	}
	ids := map[string]bool{}
	for _, t := range s.Tasks {
		if !oracleValidID.MatchString(t.ID) || ids[t.ID] {
			return true
		}
		ids[t.ID] = true
		if strings.TrimSpace(t.Command) == "" || len(t.Command) > MaxCommandBytes || strings.Contains(t.Command, "\x00") ||
			t.TimeoutSec < 0 || t.TimeoutSec > 7*24*3600 || t.Retries < 0 || t.Retries > MaxRetries ||
			strings.Contains(t.Cwd, "\x00") {
			return true
		}
		envBytes := 0
		for k, v := range t.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") || len(v) > MaxEnvValueBytes {
				return true
			}
			envBytes += len(k) + len(v)
		}
		if len(t.Env) > MaxEnvVars || envBytes > MaxEnvBytes {
			return true
		}
	}
	for _, t := range s.Tasks {
		for k, d := range t.DependsOn {
			if !ids[d] || slices.Contains(t.DependsOn[:k], d) {
				return true
			}
		}
	}
	return false
}

// oracleCyclic reports whether the tasks (ids unique, dependencies known) form a cycle, by
// removing tasks whose dependencies are all removed until none is left or none can go.
func oracleCyclic(s Spec) bool {
	done := map[string]bool{}
	for progress := true; progress; {
		progress = false
		for _, t := range s.Tasks {
			if done[t.ID] {
				continue
			}
			ready := true
			for _, d := range t.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				done[t.ID] = true
				progress = true
			}
		}
	}
	return len(done) < len(s.Tasks)
}

func FuzzValidate(f *testing.F) {
	for _, tt := range validateErrorCases {
		if text := encodeSpec(tt.spec); len(text) < 4096 && cmp.Equal(decodeSpec(text), tt.spec, cmpopts.EquateEmpty()) {
			f.Add(text)
		}
	}
	// Random small graphs over few ids, so that mutations easily close or open cycles.
	r := rand.New(rand.NewPCG(5, 5))
	for range 20 {
		n := 1 + r.IntN(6)
		var ts []TaskSpec
		for i := range n {
			t := vTask(string(rune('a' + i)))
			for range r.IntN(3) {
				if d := string(rune('a' + r.IntN(n))); !slices.Contains(t.DependsOn, d) {
					t.DependsOn = append(t.DependsOn, d)
				}
			}
			ts = append(ts, t)
		}
		f.Add(encodeSpec(vSpec(ts...)))
	}
	f.Fuzz(func(t *testing.T, text string) {
		spec := decodeSpec(text)
		calls := map[string]int{}
		v, err := Validate(spec, fuzzLimits, func(cwd string) (string, error) {
			calls[cwd]++
			return vConfine(cwd)
		})
		for cwd, n := range calls {
			if n > 1 {
				t.Errorf("confine(%q) called %d times", cwd, n)
			}
		}
		var cyc *CycleError
		if errors.As(err, &cyc) {
			if e := checkCycle(spec, cyc.Path); e != nil {
				t.Fatalf("Validate() path %q is no cycle: %v", cyc.Path, e)
			}
		}
		if err != nil && len(kindOf(err)) != 1 {
			t.Fatalf("Validate() = %v, of kinds %v; want exactly one", err, kindOf(err))
		}
		outside := slices.ContainsFunc(spec.Tasks, func(t TaskSpec) bool { return strings.HasPrefix(t.Cwd, "..") })
		switch {
		case oracleRefusedAlone(spec, fuzzLimits):
			if err == nil || errors.Is(err, ErrCycle) || errors.Is(err, errOutsideTest) {
				t.Fatalf("Validate() = %v, want a refusal for the spec alone", err)
			}
		case oracleCyclic(spec):
			if cyc == nil {
				t.Fatalf("Validate() = %v, want a *CycleError", err)
			}
		case outside:
			if !errors.Is(err, errOutsideTest) {
				t.Fatalf("Validate() = %v, want the confine error", err)
			}
		default:
			if err != nil {
				t.Fatalf("Validate() = %v, want success", err)
			}
			if e := orderError(spec, v.Order); e != nil {
				t.Fatalf("Validate().Order = %v: %v", v.Order, e)
			}
			for i, task := range spec.Tasks {
				if want, _ := vConfine(task.Cwd); v.Dirs[i] != want {
					t.Fatalf("Validate().Dirs[%d] = %q, want %q", i, v.Dirs[i], want)
				}
			}
		}
	})
}
