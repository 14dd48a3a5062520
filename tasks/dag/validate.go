package dag

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// maxIDLen is the longest task id, fixed by the id pattern ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$.
const maxIDLen = 64

// idRule says what an id may be, for messages that tell how to fix one.
const idRule = "an id is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"

// Validate checks a spec before anything is stored, resolves every task's cwd with confine
// and computes a topological order. It returns the first problem it finds, naming the task
// (by id, or as tasks[i] when the id itself is bad) and saying how to fix it; one invalid
// task refuses the whole graph.
//
// Checks run cheapest first, so a refused graph costs no file system access: the graph's
// own fields, then each task's fields in submitted order, then every dependsOn entry
// (unknown ids before cycles), then cycles, then the cwds. A dependsOn that names the same
// task twice is refused (ErrInvalid) rather than deduplicated, so that what is stored and
// shown back is exactly what was sent.
//
// confine must be non-nil. It receives each distinct cwd string once (a 10,000-task graph
// with one cwd resolves it once), "" included, which means the workspace root. It must
// return an absolute directory or an error; the error is returned wrapped with the id of
// the first task that uses that cwd, so errors.Is still finds its sentinel.
//
// Order is the order of a depth-first walk that takes tasks in submitted order and puts
// each one right after those of its dependencies (in dependsOn order) not yet placed. A
// submission already in dependency order therefore comes back unchanged, and otherwise a
// task comes as early as its dependencies let it. It costs O(tasks + dependencies) and
// finds a cycle, if there is one, on the way.
func Validate(spec Spec, lim Limits, confine func(cwd string) (string, error)) (Validated, error) {
	if confine == nil {
		return Validated{}, errors.New("tasks.Validate: no confine function")
	}
	n := len(spec.Tasks)
	maxTasks := lim.MaxTasks
	if maxTasks <= 0 {
		maxTasks = DefaultMaxTasks
	}
	switch {
	case n == 0:
		return Validated{}, fmt.Errorf(`%w: tasks is empty; give at least one task, e.g. {"id": "build", "command": "make"}`, ErrInvalid)
	case n > maxTasks:
		return Validated{}, fmt.Errorf("%w: the graph has %d tasks, at most %d are accepted per graph; split it into several graphs",
			ErrLimit, n, maxTasks)
	}
	if err := checkGraphFields(spec, lim); err != nil {
		return Validated{}, err
	}

	// index maps ids to task indexes; its size is known, so it is allocated once.
	index := make(map[string]int32, n)
	edges := 0
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		if err := checkID(i, t.ID); err != nil {
			return Validated{}, err
		}
		if first, dup := index[t.ID]; dup {
			return Validated{}, &DuplicateTaskError{ID: t.ID, First: int(first), Second: i}
		}
		index[t.ID] = int32(i)
		if err := checkTaskFields(t); err != nil {
			return Validated{}, err
		}
		if err := checkExecutor(t, spec.Executor); err != nil {
			return Validated{}, err
		}
		edges += len(t.DependsOn)
	}

	// The dependencies as task indexes, laid out flat (task i's are adj[start[i]:start[i+1]])
	// so that a 10,000-task graph costs two allocations rather than 10,000.
	start := make([]int32, n+1)
	adj := make([]int32, 0, edges)
	seen := make([]int32, n) // seen[d] == i+1: task i already lists d
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		for _, dep := range t.DependsOn {
			d, ok := index[dep]
			if !ok {
				return Validated{}, &UnknownDependencyError{Task: t.ID, Dependency: dep, Closest: closestIDs(dep, spec.Tasks)}
			}
			if seen[d] == int32(i+1) {
				return Validated{}, fmt.Errorf("%w: task %q lists %q twice in dependsOn; list each dependency once",
					ErrInvalid, t.ID, dep)
			}
			seen[d] = int32(i + 1)
			adj = append(adj, d)
		}
		start[i+1] = int32(len(adj))
	}

	order, cycle := topoSort(start, adj, true)
	if cycle != nil {
		path := make([]string, len(cycle))
		for k, i := range cycle {
			path[k] = spec.Tasks[i].ID
		}
		return Validated{}, &CycleError{Path: path}
	}

	dirs := make([]string, n)
	resolved := make(map[string]string) // usually one or two entries, whatever n is
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		dir, ok := resolved[t.Cwd]
		if !ok {
			var err error
			if dir, err = confine(t.Cwd); err != nil {
				return Validated{}, fmt.Errorf("task %q: %w", t.ID, err)
			}
			if !filepath.IsAbs(dir) {
				// confine broke its contract; running the task in a relative dir would
				// depend on the server's own cwd, so refuse rather than guess.
				return Validated{}, fmt.Errorf("tasks.Validate: confine(%q) returned %q, not an absolute path", t.Cwd, dir)
			}
			resolved[t.Cwd] = dir
		}
		dirs[i] = dir
	}

	ord := make([]int, n)
	for k, i := range order {
		ord[k] = int(i)
	}
	return Validated{Spec: spec, Dirs: dirs, Order: ord}, nil
}

// checkGraphFields checks the fields of the graph itself, not of its tasks.
func checkGraphFields(spec Spec, lim Limits) error {
	if len(spec.Name) > MaxNameBytes {
		return fmt.Errorf("%w: name is %d bytes, at most %d are accepted; shorten it", ErrLimit, len(spec.Name), MaxNameBytes)
	}
	if len(spec.IdempotencyKey) > MaxIdempotencyKeyBytes {
		return fmt.Errorf("%w: idempotencyKey is %d bytes, at most %d are accepted; use a short key such as a UUID or a hash",
			ErrLimit, len(spec.IdempotencyKey), MaxIdempotencyKeyBytes)
	}
	if spec.Executor != "" && spec.Executor != ExecutorLocal && spec.Executor != ExecutorKubernetes {
		return fmt.Errorf("%w: executor is %s; use %q (this machine, the default) or %q (a pod on the server's cluster)",
			ErrInvalid, quote.Short(string(spec.Executor)), ExecutorLocal, ExecutorKubernetes)
	}
	if spec.MaxParallel < 0 {
		return fmt.Errorf("%w: maxParallel is %d; use a positive number, or 0 for the default (the CPU count)",
			ErrInvalid, spec.MaxParallel)
	}
	if lim.MaxParallel > 0 && spec.MaxParallel > lim.MaxParallel {
		return fmt.Errorf("%w: maxParallel is %d, at most %d is accepted by this server; lower it, or use 0 for the default",
			ErrLimit, spec.MaxParallel, lim.MaxParallel)
	}
	return nil
}

// checkID checks the id of tasks[i] against ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, by hand
// because a regexp would be the slowest part of validating a large graph.
func checkID(i int, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: tasks[%d] has no id; give it one such as \"build\" (%s)", ErrInvalid, i, idRule)
	case len(id) > maxIDLen:
		return fmt.Errorf("%w: tasks[%d]: id %s is %d bytes long; shorten it (%s)", ErrInvalid, i, quote.Short(id), len(id), idRule)
	}
	for k := 0; k < len(id); k++ {
		c := id[k]
		if isAlnum(c) || (k > 0 && (c == '.' || c == '_' || c == '-')) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(id[k:]) // name the character, not its first byte
		what := fmt.Sprintf("contains %q", r)
		if k == 0 {
			what = fmt.Sprintf("starts with %q", r)
		}
		return fmt.Errorf("%w: tasks[%d]: id %q %s; %s", ErrInvalid, i, id, what, idRule)
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// maxTimeoutSec is MaxTimeout in the unit of TaskSpec.TimeoutSec.
const maxTimeoutSec = int(MaxTimeout / time.Second)

// checkTaskFields checks the fields of a task that need nothing but the task itself. Its
// id has been checked, so messages name the task by id.
func checkTaskFields(t *TaskSpec) error {
	switch {
	case t.Command == "":
		return fmt.Errorf("%w: task %q has no command; give the shell command to run, e.g. \"make test\"", ErrInvalid, t.ID)
	case strings.TrimSpace(t.Command) == "":
		return fmt.Errorf("%w: task %q: command is blank (only white space); give the shell command to run", ErrInvalid, t.ID)
	case len(t.Command) > MaxCommandBytes:
		return fmt.Errorf("%w: task %q: command is %d bytes, at most %d are accepted; put a long script in a file in the workspace and run that",
			ErrLimit, t.ID, len(t.Command), MaxCommandBytes)
	}
	if k := strings.IndexByte(t.Command, 0); k >= 0 {
		return fmt.Errorf("%w: task %q: command has a NUL byte at offset %d; remove it (a command is one bash -c argument)",
			ErrInvalid, t.ID, k)
	}
	switch {
	case t.TimeoutSec < 0:
		return fmt.Errorf("%w: task %q: timeoutSec is %d; use a number of seconds, or 0 for no timeout", ErrInvalid, t.ID, t.TimeoutSec)
	case t.TimeoutSec > maxTimeoutSec:
		return fmt.Errorf("%w: task %q: timeoutSec is %d, at most %d (%d days) is accepted; lower it, or use 0 for no timeout",
			ErrLimit, t.ID, t.TimeoutSec, maxTimeoutSec, MaxTimeout/(24*time.Hour))
	case t.Retries < 0:
		return fmt.Errorf("%w: task %q: retries is %d; use 0 for a single attempt, or the number of extra attempts", ErrInvalid, t.ID, t.Retries)
	case t.Retries > MaxRetries:
		return fmt.Errorf("%w: task %q: retries is %d, at most %d are accepted; lower it", ErrLimit, t.ID, t.Retries, MaxRetries)
	}
	if strings.IndexByte(t.Cwd, 0) >= 0 {
		return fmt.Errorf("%w: task %q: cwd has a NUL byte; give a directory relative to the workspace", ErrInvalid, t.ID)
	}
	if err := checkEnvSize(t); err != nil {
		return err
	}
	// Map order is random: report the smallest bad name so that the same spec always
	// gets the same message.
	var bad, why string
	for k, v := range t.Env {
		if w := envProblem(k, v); w != "" && (why == "" || k < bad) {
			bad, why = k, w
		}
	}
	if why != "" {
		return fmt.Errorf("%w: task %q: env %s %s", ErrInvalid, t.ID, quote.Short(bad), why)
	}
	return nil
}

// checkEnvSize refuses an env over the limits before its entries are looked at.
func checkEnvSize(t *TaskSpec) error {
	if len(t.Env) > MaxEnvVars {
		return fmt.Errorf("%w: task %q: env has %d variables, at most %d are accepted", ErrLimit, t.ID, len(t.Env), MaxEnvVars)
	}
	total := 0
	var big string // the smallest name with a value over the limit: the same spec, the same message
	for k, v := range t.Env {
		total += len(k) + len(v)
		if len(v) > MaxEnvValueBytes && (big == "" || k < big) {
			big = k
		}
	}
	switch {
	case big != "":
		return fmt.Errorf("%w: task %q: env %s is %d bytes long, at most %d are accepted per value; pass a long value in a file instead",
			ErrLimit, t.ID, quote.Short(big), len(t.Env[big]), MaxEnvValueBytes)
	case total > MaxEnvBytes:
		return fmt.Errorf("%w: task %q: env is %d bytes (names and values), at most %d are accepted", ErrLimit, t.ID, total, MaxEnvBytes)
	}
	return nil
}

// envProblem says what is wrong with one environment entry, or "" when nothing is.
func envProblem(k, v string) string {
	switch {
	case k == "":
		return "has an empty name; name the variable or remove the entry"
	case strings.IndexByte(k, '=') >= 0:
		return "has '=' in its name; a name cannot contain '=', put the value on the right-hand side"
	case strings.IndexByte(k, 0) >= 0:
		return "has a NUL byte in its name; remove it"
	case strings.IndexByte(v, 0) >= 0:
		return "has a NUL byte in its value; remove it"
	}
	return ""
}
