package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// slotNote is the sentence tasks_graph and tasks_status add to their text when a task of
// the graph is ready but has not started: which cap holds it back and which running tasks
// hold the slots, so that an agent can cancel one of them (a dev server it forgot) or wait
// knowing why. It is "" when no task is ready, or when the reading fails: the note is a
// help, not the result.
func (s *Table) slotNote(ctx context.Context, snap tasks.Snapshot) string {
	w, err := s.tasks.SlotWait(ctx, snap)
	if err != nil || w == nil {
		return ""
	}
	return slotNoteOf(w, snap.Graph)
}

// slotNotePage is slotNote for a page tasks.StatusPage read, whose tasks count p.
func (s *Table) slotNotePage(ctx context.Context, v tasks.PageView, p tasks.Progress) string {
	w, err := s.tasks.SlotWaitPage(ctx, v, p)
	if err != nil || w == nil {
		return ""
	}
	return slotNoteOf(w, v.Graph)
}

// slotNoteOf says w in words, for graph g.
func slotNoteOf(w *tasks.SlotWait, g tasks.Graph) string {
	const most = 5
	now := time.Now()
	names := make([]string, 0, min(len(w.HeldBy), most+1))
	for i, h := range w.HeldBy {
		if i == most {
			names = append(names, fmt.Sprintf("%d more", len(w.HeldBy)-most))
			break
		}
		name := h.TaskID
		if h.GraphID != g.ID {
			name = h.GraphID + "/" + h.TaskID
		}
		if h.StartedAt != nil {
			name += fmt.Sprintf(" (running %s)", now.Sub(h.StartedAt.Time).Round(time.Second))
		}
		names = append(names, name)
	}
	held := strings.Join(names, ", ")
	switch w.Cap {
	case tasks.CapGraph:
		return fmt.Sprintf("Ready tasks wait for a free slot: this graph's maxParallel (%d) is taken by %s.", g.MaxParallel, held)
	case tasks.CapPods:
		return fmt.Sprintf("Ready kubernetes tasks wait for a pod slot: the server's --kube-max-pods is taken by %s.", held)
	}
	return fmt.Sprintf("Ready tasks wait for a free slot: the server's --max-parallel is taken by %s. "+
		"(A graph with no task running always gets one slot, so no graph waits for ever behind another's; tasks_cancel frees a slot.)", held)
}
