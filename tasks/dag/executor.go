package dag

import (
	"fmt"
	"regexp"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// ExecutorOf is where a task runs: its own executor, else the graph's (def), else
// ExecutorLocal.
func ExecutorOf(t TaskSpec, def ExecutorName) ExecutorName {
	switch {
	case t.Executor != "":
		return t.Executor
	case def != "":
		return def
	}
	return ExecutorLocal
}

// quantity is the form of a Kubernetes resource quantity a task may ask for: a positive
// decimal number and an optional suffix (milli, the decimal and binary multiples, or an
// exponent), as "500m", "2", "1.5", "512Mi" or "1G". The cluster parses it again.
var quantity = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$`)

// checkExecutor checks a task's executor and the resources it asks for: only a
// Kubernetes task (by its own executor or the graph's, def) may ask for cpu or memory (a
// local task takes what the machine has).
func checkExecutor(t *TaskSpec, def ExecutorName) error {
	switch t.Executor {
	case "", ExecutorLocal, ExecutorKubernetes:
	default:
		return fmt.Errorf("%w: task %q: executor is %s; use %q (this machine) or %q (a pod on the server's cluster)",
			ErrInvalid, t.ID, quote.Short(string(t.Executor)), ExecutorLocal, ExecutorKubernetes)
	}
	for _, r := range []struct{ name, v, example string }{{"cpu", t.CPU, `"500m" or "2"`}, {"memory", t.Memory, `"512Mi" or "2Gi"`}} {
		if r.v == "" {
			continue
		}
		if ExecutorOf(*t, def) != ExecutorKubernetes {
			return fmt.Errorf("%w: task %q: resources.%s applies to a pod; give it with executor %q, or leave it out",
				ErrInvalid, t.ID, r.name, ExecutorKubernetes)
		}
		if !quantity.MatchString(r.v) || isZero(r.v) {
			return fmt.Errorf("%w: task %q: resources.%s is %s, not a positive Kubernetes quantity; use e.g. %s",
				ErrInvalid, t.ID, r.name, quote.Short(r.v), r.example)
		}
	}
	return nil
}

// isZero reports whether a quantity's number is zero ("0", "0.0m"): a pod that asks for
// nothing should leave the field out.
func isZero(q string) bool {
	for _, c := range q {
		switch {
		case c >= '1' && c <= '9':
			return false
		case c == '0' || c == '.':
		default:
			return true // the suffix: every digit before it was 0
		}
	}
	return true
}
