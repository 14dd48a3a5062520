package kube

import (
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-harness/mcp-harness/tasks"
)

var testID = tasks.AttemptID{Workspace: "ws", GraphID: "g-1", TaskID: "build", Attempt: 1}

func podWith(phase corev1.PodPhase, cs *corev1.ContainerStatus, conds ...corev1.PodCondition) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mh-build-x-1-abcde"}, Spec: corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
	if cs != nil {
		cs.Name = container
		p.Status.ContainerStatuses = []corev1.ContainerStatus{*cs}
	}
	return p
}

func running() *corev1.ContainerStatus {
	return &corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func terminated(code int32, reason string) *corev1.ContainerStatus {
	return &corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
}

func waiting(reason, msg string) *corev1.ContainerStatus {
	return &corev1.ContainerStatus{Image: "example.com/nope:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func cond(t corev1.PodConditionType, s corev1.ConditionStatus, reason, msg string) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// Every state a pod can be in comes out as the right phase and code, and the states only
// lasting makes failures wait out their limit first.
func TestClassify(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: JobName(testID)}}
	lim := limits{schedule: time.Minute, pull: time.Minute}
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name      string
		job       *batchv1.Job
		pod       *corev1.Pod
		cancelled bool
		seen      sightings
		now       time.Time
		phase     tasks.Phase
		code      string
		exit      string
		stop      bool
		msg       string
	}{
		{name: "JobNotSeenYet", phase: tasks.PhasePending},
		{name: "NoPodYet", job: job, phase: tasks.PhasePending},
		{name: "NoPodForLong", job: job, now: t0.Add(2 * time.Minute), phase: tasks.PhaseEnded, code: tasks.CodeUnschedulable, stop: true, msg: "no pod was created"},
		{name: "Scheduling", job: job, pod: podWith(corev1.PodPending, nil), phase: tasks.PhasePending},
		{name: "UnschedulableAWhile", job: job, pod: podWith(corev1.PodPending, nil, cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, "0/2 nodes are available: 2 Insufficient cpu.")),
			seen: sightings{unschedulable: t0.Add(-30 * time.Second)}, phase: tasks.PhasePending},
		{name: "UnschedulableTooLong", job: job, pod: podWith(corev1.PodPending, nil, cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, "0/2 nodes are available: 2 Insufficient cpu.")),
			seen: sightings{unschedulable: t0.Add(-2 * time.Minute)}, phase: tasks.PhaseEnded, code: tasks.CodeUnschedulable, stop: true, msg: "Insufficient cpu"},
		{name: "ImagePullFailingAWhile", job: job, pod: podWith(corev1.PodPending, waiting("ErrImagePull", "not found")), seen: sightings{pullFailing: t0.Add(-10 * time.Second)}, phase: tasks.PhasePending},
		{name: "ImagePullBackOff", job: job, pod: podWith(corev1.PodPending, waiting("ImagePullBackOff", "Back-off pulling image")), phase: tasks.PhaseEnded, code: tasks.CodeSpawnFailed, stop: true, msg: `the image "example.com/nope:1" cannot be pulled`},
		{name: "ImagePullTooLong", job: job, pod: podWith(corev1.PodPending, waiting("ErrImagePull", "not found")), seen: sightings{pullFailing: t0.Add(-2 * time.Minute)}, phase: tasks.PhaseEnded, code: tasks.CodeSpawnFailed, stop: true},
		{name: "InvalidImageName", job: job, pod: podWith(corev1.PodPending, waiting("InvalidImageName", "bad")), phase: tasks.PhaseEnded, code: tasks.CodeSpawnFailed, stop: true},
		{name: "ConfigError", job: job, pod: podWith(corev1.PodPending, waiting("CreateContainerConfigError", "secret missing")), phase: tasks.PhaseEnded, code: tasks.CodeSpawnFailed, stop: true, msg: "container cannot start"},
		{name: "Running", job: job, pod: podWith(corev1.PodRunning, running(), cond(corev1.PodReady, corev1.ConditionTrue, "", ""), cond(corev1.ContainersReady, corev1.ConditionTrue, "", "")), phase: tasks.PhaseRunning},
		{name: "NodeNotReady", job: job, pod: podWith(corev1.PodRunning, running(), cond(corev1.PodReady, corev1.ConditionFalse, "", ""), cond(corev1.ContainersReady, corev1.ConditionTrue, "", "")),
			phase: tasks.PhaseEnded, code: tasks.CodeNodeLost, stop: true, msg: "node-a stopped reporting"},
		{name: "Evicted", job: job, pod: podWith(corev1.PodRunning, running(), cond(corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")),
			phase: tasks.PhaseEnded, code: tasks.CodeNodeLost, stop: true, msg: "evicted"},
		{name: "PodUnknown", job: job, pod: podWith(corev1.PodUnknown, running()), phase: tasks.PhaseEnded, code: tasks.CodeNodeLost, stop: true},
		{name: "PodFailedNoContainer", job: job, pod: podWith(corev1.PodFailed, nil), phase: tasks.PhaseEnded, code: tasks.CodeNodeLost, stop: true},
		{name: "Succeeded", job: job, pod: podWith(corev1.PodSucceeded, terminated(0, "Completed")), phase: tasks.PhaseEnded, exit: "0"},
		{name: "ExitNonzero", job: job, pod: podWith(corev1.PodFailed, terminated(3, "Error")), phase: tasks.PhaseEnded, exit: "3"},
		{name: "OOMKilled", job: job, pod: podWith(corev1.PodFailed, terminated(137, "OOMKilled")), phase: tasks.PhaseEnded, exit: "137", msg: "OOMKilled"},
		{name: "StartError", job: job, pod: podWith(corev1.PodFailed, terminated(128, "StartError")), phase: tasks.PhaseEnded, code: tasks.CodeSpawnFailed, msg: "could not start"},
		{name: "JobGoneAfterSeen", pod: podWith(corev1.PodRunning, running()), seen: sightings{jobSeen: true}, phase: tasks.PhaseEnded, code: tasks.CodeNodeLost, msg: "deleted outside"},
		{name: "AllGone", seen: sightings{jobSeen: true}, phase: tasks.PhaseGone},
		{name: "CancelledDeleting", job: job, pod: podWith(corev1.PodRunning, running()), cancelled: true, phase: tasks.PhasePending},
		{name: "CancelledGone", cancelled: true, seen: sightings{jobSeen: true}, phase: tasks.PhaseEnded},
		{name: "CancelledExited", job: job, pod: podWith(corev1.PodFailed, terminated(143, "Error")), cancelled: true, phase: tasks.PhasePending},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen := c.seen
			seen.created = t0
			now := c.now
			if now.IsZero() {
				now = t0
			}
			v := classify(testID, c.job, c.pod, c.cancelled, &seen, lim, now)
			exit := ""
			if v.st.ExitCode != nil {
				exit = strconv.Itoa(*v.st.ExitCode)
			}
			if v.st.Phase != c.phase || v.st.Code != c.code || exit != c.exit || v.stop != c.stop || !strings.Contains(v.st.Message, c.msg) {
				t.Errorf("classify = phase %s, code %q, exit %q, stop %v, message %q; want %s, %q, %q, %v, containing %q",
					v.st.Phase, v.st.Code, exit, v.stop, v.st.Message, c.phase, c.code, c.exit, c.stop, c.msg)
			}
			if v.st.Placement.Job != JobName(testID) {
				t.Errorf("placement job = %q, want %q", v.st.Placement.Job, JobName(testID))
			}
		})
	}
}
