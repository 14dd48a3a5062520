package kube

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcp-harness/mcp-harness/tasks"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// A Job's name is DNS-safe and at most 63 characters whatever the task id, the same for
// the same attempt and different for another attempt, task, graph or workspace.
func TestJobName(t *testing.T) {
	base := tasks.AttemptID{Workspace: "ws", GraphID: "g-01ABC", TaskID: "Build.Linux_amd64", Attempt: 1}
	seen := map[string]tasks.AttemptID{}
	for _, id := range []tasks.AttemptID{
		base,
		{Workspace: "ws", GraphID: "g-01ABC", TaskID: "Build.Linux_amd64", Attempt: 2},
		{Workspace: "ws", GraphID: "g-01ABD", TaskID: "Build.Linux_amd64", Attempt: 1},
		{Workspace: "other", GraphID: "g-01ABC", TaskID: "Build.Linux_amd64", Attempt: 1},
		{Workspace: "ws", GraphID: "g-01ABC", TaskID: "build-linux-amd64", Attempt: 1},
		{Workspace: "ws", GraphID: "g-01ABC", TaskID: strings.Repeat("x", 64), Attempt: 101},
		{Workspace: "ws", GraphID: "g-01ABC", TaskID: "___", Attempt: 1},
		{Workspace: "ws", GraphID: "g-01ABC", TaskID: "9.-", Attempt: 1},
	} {
		name := JobName(id)
		if len(name) > 63 || !dnsLabel.MatchString(name) {
			t.Errorf("JobName(%+v) = %q: not a DNS label of at most 63 characters", id, name)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("JobName(%+v) = JobName(%+v) = %q", id, prev, name)
		}
		seen[name] = id
	}
	again := base
	if JobName(again) != JobName(base) {
		t.Error("JobName is not stable")
	}
}

// Labels are valid label values for any task id, and read back to the attempt with the
// annotations.
func TestLabels(t *testing.T) {
	for _, task := range []string{"build", "Build.Linux_amd64", "ends-with-dash-", strings.Repeat("y", 64), "a"} {
		id := tasks.AttemptID{Workspace: "0123456789abcdef", GraphID: "g-01KX", TaskID: task, Attempt: 7}
		l := Labels(id, "r-0123")
		for k, v := range l {
			if len(v) > 63 || !validLabel.MatchString(v) {
				t.Errorf("label %s=%q for task %q is not a valid label value", k, v, task)
			}
		}
		x := New(Config{Kubeconfig: "/nonexistent"}) // the spec is made without a cluster
		x.ns = "ns"
		job, err := x.jobSpec(tasks.Attempt{ID: id, Runner: "r-0123", Command: "make", Cwd: "sub/dir", Env: []string{"A=1", "B=two=2", "bad"}})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := attemptOf(job.ObjectMeta)
		if !ok || got != id {
			t.Errorf("attemptOf(the Job of %+v) = %+v, %v", id, got, ok)
		}
	}
}

// The Job runs its one pod once, never retried by the Job controller, with the task's
// command, directory, environment and resources, waiting for the snapshot only when
// there is one.
func TestJobSpec(t *testing.T) {
	x := New(Config{Kubeconfig: "/nonexistent", Image: "img:1", ServiceAccount: "", TTL: 10 * time.Minute})
	x.ns = "ns"
	id := tasks.AttemptID{Workspace: "w", GraphID: "g-1", TaskID: "t", Attempt: 1}
	job, err := x.jobSpec(tasks.Attempt{ID: id, Command: "go test ./...", Cwd: "pkg", Env: []string{"GOFLAGS=-count=1"},
		Resources: tasks.Resources{CPU: "500m", Memory: "1Gi"}, Snapshot: &tasks.SnapshotRef{Path: "/x", SHA256: "ab"}})
	if err != nil {
		t.Fatal(err)
	}
	s := job.Spec
	if *s.BackoffLimit != 0 || *s.TTLSecondsAfterFinished != 600 || s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("backoffLimit %d, ttl %d, restart %s; want 0, 600, Never", *s.BackoffLimit, *s.TTLSecondsAfterFinished, s.Template.Spec.RestartPolicy)
	}
	if *s.Template.Spec.AutomountServiceAccountToken {
		t.Error("a pod without a service account named mounts a token")
	}
	c := s.Template.Spec.Containers[0]
	if c.Image != "img:1" || !slices.Equal(c.Command[3:], []string{"mcp-harness", "pkg", "go test ./...", syncWait}) {
		t.Errorf("container image %q, command %q", c.Image, c.Command)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "GOFLAGS" || c.Env[0].Value != "-count=1" {
		t.Errorf("env = %+v", c.Env)
	}
	if c.Resources.Requests.Cpu().String() != "500m" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("resources = %+v", c.Resources)
	}
	if _, err := x.jobSpec(tasks.Attempt{ID: id, Resources: tasks.Resources{CPU: "lots"}}); err == nil {
		t.Error("a cpu that is not a quantity was accepted")
	}
	nosync, _ := x.jobSpec(tasks.Attempt{ID: id, Command: "true"})
	if got := nosync.Spec.Template.Spec.Containers[0].Command[6]; got != syncNone {
		t.Errorf("without a snapshot the wrapper is told %q, want %q", got, syncNone)
	}
}
