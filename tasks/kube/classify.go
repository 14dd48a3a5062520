package kube

// This file reads an attempt's Job and pod as the cluster reports them and says what has
// become of the attempt: pending, running, or ended, and how. It touches nothing: the
// executor acts on its answer (run.go). The clock-dependent parts (how long a pod has been
// unschedulable, how long its image has failed to pull) are measured from first sightings
// that the caller keeps (sightings).

import (
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// sightings are when the executor first saw an attempt's pod in a state that only
// lasting makes a failure.
type sightings struct {
	created       time.Time // the Job was created (or taken over)
	jobSeen       bool      // the Job was seen in the cluster at least once
	exit          *int      // the exit code of the container, once seen terminated
	unschedulable time.Time // PodScheduled False, Unschedulable
	pullFailing   time.Time // an image pull failing
	nodeNotReady  time.Time // the pod's Ready condition went False under a running container
}

// verdict is what classify makes of an attempt.
type verdict struct {
	st tasks.RunStatus
	// stop: the executor ends the attempt itself (st says why): its Job is deleted.
	stop bool
	// started: the container has started, so its log can be read; running: it runs
	// now, so the snapshot can be streamed in.
	started, running bool
}

// Limits of what classify waits out before it calls a pod's state a failure.
type limits struct {
	schedule  time.Duration // unschedulable for this long: UNSCHEDULABLE
	pull      time.Duration // an image failing to pull for this long: SPAWN_FAILED
	nodeGrace time.Duration // Ready False under a running container for this long: NODE_LOST
}

// imageFailures are the waiting reasons that mean the container cannot start: those in
// fatal at once, the others once they last (a registry may answer again).
var (
	imageFailures = []string{"ErrImagePull", "ImagePullBackOff", "RegistryUnavailable", "InvalidImageName",
		"ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError", "PostStartHookError"}
	fatal = []string{"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "ImagePullBackOff"}
	// startFailures are the reasons of a container that ended without its command having
	// run (an exec that failed).
	startFailures = []string{"StartError", "ContainerCannotRun"}
)

// classify says what job and pod (the attempt's newest pod; nil: none yet) make of the
// attempt. job is nil when the Job is not (or no longer) there; cancelled says the
// executor deleted it.
func classify(id tasks.AttemptID, job *batchv1.Job, pod *corev1.Pod, cancelled bool, seen *sightings, lim limits, now time.Time) verdict {
	v := verdict{st: tasks.RunStatus{ID: id, Phase: tasks.PhasePending, Cancelled: cancelled}}
	v.st.Placement.Job = JobName(id)
	if pod != nil {
		v.st.Placement.Pod, v.st.Placement.Node = pod.Name, pod.Spec.NodeName
	}
	ended := func(code, msg string) verdict {
		v.st.Phase, v.st.Code, v.st.Message = tasks.PhaseEnded, code, msg
		return v
	}
	var cs *corev1.ContainerStatus
	if pod != nil {
		for i := range pod.Status.ContainerStatuses {
			if pod.Status.ContainerStatuses[i].Name == container {
				cs = &pod.Status.ContainerStatuses[i]
			}
		}
	}
	if job != nil {
		seen.jobSeen = true
	}
	if cancelled {
		// Deleted by Cancel: ended once the Job and its pod are gone, with the exit code
		// the command had, if it ended before.
		if cs != nil && cs.State.Terminated != nil {
			code := int(cs.State.Terminated.ExitCode)
			seen.exit = &code
		}
		if job == nil && pod == nil {
			v.st.Phase, v.st.ExitCode = tasks.PhaseEnded, seen.exit
		}
		return v
	}
	// The command ran to its end: its exit code, whatever else is going on.
	if cs != nil && cs.State.Terminated != nil {
		t := cs.State.Terminated
		v.started = true
		if slices.Contains(startFailures, t.Reason) {
			return ended(tasks.CodeSpawnFailed, fmt.Sprintf("the pod's container could not start (%s): %s", t.Reason, strings.TrimSpace(t.Message)))
		}
		v.st.Phase = tasks.PhaseEnded
		code := int(t.ExitCode)
		v.st.ExitCode = &code
		if t.Reason == "OOMKilled" {
			v.st.Message = "OOMKilled: the pod ran out of memory (resources.memory)"
		}
		return v
	}
	switch {
	case job == nil && !seen.jobSeen:
		return v // created, not seen yet (the caller asks the cluster directly after a while)
	case job == nil && pod == nil:
		v.st.Phase = tasks.PhaseGone
		return v
	case job == nil:
		return ended(tasks.CodeNodeLost, "the attempt's Job was deleted outside mcp-harness (kubectl delete, or its namespace went away)")
	}
	if c := jobCondition(job, batchv1.JobFailed); c != nil && (pod == nil || pod.Status.Phase == corev1.PodFailed) {
		return ended(tasks.CodeNodeLost, fmt.Sprintf("the Job failed without the command's exit status (%s): %s", c.Reason, c.Message))
	}
	if pod == nil {
		if now.Sub(seen.created) > lim.schedule {
			return stopped(ended(tasks.CodeUnschedulable, fmt.Sprintf("no pod was created for Job %s within %s (a quota, an admission policy? see kubectl describe job %s)",
				job.Name, lim.schedule, job.Name)))
		}
		return v
	}
	if pod.DeletionTimestamp != nil && (cs == nil || cs.State.Running == nil) {
		return stopped(ended(tasks.CodeNodeLost, "the pod was deleted before its command ended"))
	}
	if c := podCondition(pod, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		return stopped(ended(tasks.CodeNodeLost, fmt.Sprintf("the pod was evicted from node %s (%s): %s", pod.Spec.NodeName, c.Reason, c.Message)))
	}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		return stopped(ended(tasks.CodeNodeLost, fmt.Sprintf("the pod failed before its command ended (%s): %s", pod.Status.Reason, pod.Status.Message)))
	case corev1.PodUnknown:
		return stopped(ended(tasks.CodeNodeLost, fmt.Sprintf("the pod's node %s stopped reporting (pod phase Unknown)", pod.Spec.NodeName)))
	}
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		if seen.unschedulable.IsZero() {
			seen.unschedulable = now
		}
		if now.Sub(seen.unschedulable) > lim.schedule {
			return stopped(ended(tasks.CodeUnschedulable, fmt.Sprintf("no node could take the pod within %s: %s", lim.schedule, c.Message)))
		}
		return v
	}
	seen.unschedulable = time.Time{}
	if cs != nil && cs.State.Waiting != nil && slices.Contains(imageFailures, cs.State.Waiting.Reason) {
		w := cs.State.Waiting
		if seen.pullFailing.IsZero() {
			seen.pullFailing = now
		}
		if slices.Contains(fatal, w.Reason) || now.Sub(seen.pullFailing) > lim.pull {
			what := "the pod's container cannot start"
			if strings.Contains(w.Reason, "Image") || w.Reason == "RegistryUnavailable" {
				what = fmt.Sprintf("the image %q cannot be pulled", cs.Image)
			}
			return stopped(ended(tasks.CodeSpawnFailed, fmt.Sprintf("%s (%s): %s", what, w.Reason, strings.TrimSpace(w.Message))))
		}
		return v
	}
	seen.pullFailing = time.Time{}
	if cs == nil || cs.State.Running == nil {
		return v
	}
	v.started, v.running = true, true
	v.st.Phase = tasks.PhaseRunning
	// A pod has no readiness probe: Ready goes False under a running container only when
	// the node controller marks the pods of a node that stopped reporting.
	ready, containers := podCondition(pod, corev1.PodReady), podCondition(pod, corev1.ContainersReady)
	if ready != nil && ready.Status == corev1.ConditionFalse && (containers == nil || containers.Status == corev1.ConditionTrue) {
		if seen.nodeNotReady.IsZero() {
			seen.nodeNotReady = now
		}
		if now.Sub(seen.nodeNotReady) >= lim.nodeGrace {
			return stopped(ended(tasks.CodeNodeLost, fmt.Sprintf("the pod's node %s stopped reporting (NotReady); what ran there is lost", pod.Spec.NodeName)))
		}
	} else {
		seen.nodeNotReady = time.Time{}
	}
	return v
}

func stopped(v verdict) verdict {
	v.stop = true
	return v
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}
