package tasks

import (
	"context"
	"slices"
	"time"
)

// This file answers "why has my ready task not started?" from the store, for every reader:
// the tool results, `mcp-harness tasks status|graph` and `tasks logs -f`. A ready task waits
// for a slot: one of its graph's maxParallel, or one of its server's --max-parallel. The
// engine lets a graph with no task running start one whatever the server's cap (see
// scheduleLocked), so a graph never waits behind another graph's endless tasks; past that
// first task it does wait, and this says for what.

// Which cap a ready task waits for, as SlotWait.Cap gives it.
const (
	CapGraph  = "graph"  // its graph's maxParallel tasks are running
	CapServer = "server" // the server's --max-parallel tasks are running, over all its graphs
	CapPods   = "pods"   // the server's --kube-max-pods remote tasks are running, over all its graphs
)

// SlotWait says why a graph's ready tasks have not started: which cap is reached and the
// running tasks that hold its slots, longest running first.
type SlotWait struct {
	Cap    string      `json:"cap"`
	Limit  *int        `json:"limit"` // the graph's maxParallel for CapGraph; null for CapServer and CapPods (a server's flags are not stored)
	HeldBy []SlotOwner `json:"heldBy"`
}

// SlotOwner is a running task that holds a slot.
type SlotOwner struct {
	GraphID   string `json:"graphId"`
	TaskID    string `json:"taskId"`
	StartedAt *Time  `json:"startedAt"`
}

// readyKinds reports whether snap has pending tasks whose dependencies all succeeded:
// local ones, and remote ones (which wait for a pod slot instead).
func readyKinds(snap Snapshot) (local, remote bool) {
	status := make(map[string]State, len(snap.Tasks))
	for _, t := range snap.Tasks {
		status[t.ID] = t.Status
	}
	for _, t := range snap.Tasks {
		if t.Status == Pending && depsSucceeded(t, status) {
			if t.Executor == ExecutorKubernetes {
				remote = true
			} else {
				local = true
			}
		}
	}
	return local, remote
}

func depsSucceeded(t Task, status map[string]State) bool {
	for _, d := range t.DependsOn {
		if status[d] != Succeeded {
			return false
		}
	}
	return true
}

// SlotWait says what the ready tasks of snap wait for, or nil when it has none, or when
// nothing of it runs (then a ready task is about to start: see scheduleLocked). It costs
// one store query, and only when a task is ready.
func (r *Reader) SlotWait(ctx context.Context, snap Snapshot) (*SlotWait, error) {
	readyLocal, readyRemote := readyKinds(snap)
	if !readyLocal && !readyRemote {
		return nil, nil
	}
	var own []SlotOwner
	for _, t := range snap.Tasks {
		if t.Status == Running {
			own = append(own, SlotOwner{GraphID: snap.Graph.ID, TaskID: t.ID, StartedAt: TimeOf(t.StartedAt)})
		}
	}
	if len(own) == 0 {
		return nil, nil
	}
	if len(own) >= snap.Graph.MaxParallel {
		limit := snap.Graph.MaxParallel
		sortOwners(own)
		return &SlotWait{Cap: CapGraph, Limit: &limit, HeldBy: own}, nil
	}
	running, err := r.db.RunningTasks(ctx, snap.Graph.RunnerID)
	if err != nil {
		return nil, err
	}
	// The cap of the kind that waits: pods when only remote tasks are ready, else the
	// runner's slots, held by tasks of that kind.
	w := &SlotWait{Cap: CapServer, HeldBy: make([]SlotOwner, 0, len(running))}
	remote := readyRemote && !readyLocal
	if remote {
		w.Cap = CapPods
	}
	for _, t := range running {
		if (t.Executor == string(ExecutorKubernetes)) == remote {
			w.HeldBy = append(w.HeldBy, SlotOwner{GraphID: t.GraphID, TaskID: t.ID, StartedAt: TimeOf(t.StartedAt)})
		}
	}
	return w, nil
}

// sortOwners puts the longest running first, as the store query does.
func sortOwners(o []SlotOwner) {
	start := func(s SlotOwner) time.Time {
		if s.StartedAt == nil {
			return time.Time{}
		}
		return s.StartedAt.Time
	}
	slices.SortStableFunc(o, func(a, b SlotOwner) int { return start(a).Compare(start(b)) })
}
