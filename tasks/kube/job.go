package kube

// This file is what a task's attempt becomes on the cluster: its Job's name (from the
// attempt's identity, so a second Start finds the first one's Job), its labels (how a
// runner finds its workspace's Jobs again), and the Job itself, whose one container runs
// the task's command behind a small shell wrapper that waits for the workspace snapshot
// and enters the task's directory.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// The labels and annotations on every Job and pod of an attempt. The labels are valid
// label values (a task id that is not one is hashed); the annotations hold the exact ids.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelWorkspace = "mcp-harness.io/workspace"
	LabelGraph     = "mcp-harness.io/graph"
	LabelTask      = "mcp-harness.io/task"
	LabelAttempt   = "mcp-harness.io/attempt"
	LabelRunner    = "mcp-harness.io/runner"

	AnnotationGraph = "mcp-harness.io/graph-id"
	AnnotationTask  = "mcp-harness.io/task-id"

	managedBy = "mcp-harness"
	// container is the name of the one container of a task's pod.
	container = "task"
	// mountPath is where the pod's scratch volume is mounted; the workspace snapshot is
	// unpacked below it (see wrapper).
	mountPath = "/mcp-harness"
)

// JobName is the name of an attempt's Job: DNS-safe, at most 63 characters, the same for
// the same attempt and different for any other (a hash of the workspace, graph and task,
// and the attempt's number), readable by a person (it starts with the task's id).
func JobName(id tasks.AttemptID) string {
	sum := sha256.Sum256([]byte(id.Workspace + "\x00" + id.GraphID + "\x00" + id.TaskID))
	slug := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(id.TaskID), "-"), "-")
	if len(slug) > 30 {
		slug = strings.TrimRight(slug[:30], "-")
	}
	if slug == "" {
		slug = "task"
	}
	return fmt.Sprintf("mh-%s-%s-%d", slug, hex.EncodeToString(sum[:5]), id.Attempt)
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// labelValue is v when it is a valid label value, else a short hash of it.
func labelValue(v string) string {
	if len(v) <= 63 && validLabel.MatchString(v) {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "h-" + hex.EncodeToString(sum[:8])
}

var validLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// Labels are an attempt's labels.
func Labels(id tasks.AttemptID, runner string) map[string]string {
	l := map[string]string{
		LabelManagedBy: managedBy,
		LabelWorkspace: labelValue(id.Workspace),
		LabelGraph:     labelValue(id.GraphID),
		LabelTask:      labelValue(id.TaskID),
		LabelAttempt:   strconv.Itoa(id.Attempt),
	}
	if runner != "" {
		l[LabelRunner] = labelValue(runner)
	}
	return l
}

// attemptOf reads an attempt's id back from its Job's labels and annotations.
func attemptOf(meta metav1.ObjectMeta) (tasks.AttemptID, bool) {
	n, err := strconv.Atoi(meta.Labels[LabelAttempt])
	id := tasks.AttemptID{Workspace: meta.Labels[LabelWorkspace], GraphID: meta.Annotations[AnnotationGraph],
		TaskID: meta.Annotations[AnnotationTask], Attempt: n}
	return id, err == nil && id.GraphID != "" && id.TaskID != ""
}

// Sync modes the wrapper takes: whether it waits for a snapshot.
const (
	syncWait = "snapshot"
	syncNone = "none"
)

// wrapper is the container's command (sh -c wrapper mcp-harness CWD COMMAND SYNC). It
// finds its scratch directory (the mounted volume, or, where volumes are not mounted, a
// directory in its working directory: pods/exec starts there too), waits for the
// snapshot to be unpacked there (pods/exec, see exec.go) unless SYNC is none, enters
// the task's directory in it and runs the command with bash (sh where bash is absent),
// stderr joined to stdout so the two interleave in the log as written. The command reads
// no input: a pod's stdin is closed. Its own complaints start "mcp-harness:" and exit 125.
const wrapper = `R=` + mountPath + `
[ -d "$R" ] && [ -w "$R" ] || R="$PWD/mcp-harness"
mkdir -p "$R/ws" || exit 125
if [ "$3" = ` + syncWait + ` ]; then
  i=0
  while [ ! -e "$R/.ready" ]; do
    i=$((i + 1))
    if [ "$i" -gt 6000 ]; then echo "mcp-harness: the workspace did not reach the pod within 10 minutes"; exit 125; fi
    sleep 0.1
  done
fi
cd "$R/ws" || exit 125
if [ -n "$1" ]; then
  cd "./$1" || { echo "mcp-harness: the task's directory $1 is not in the workspace the pod got (see --kube-sync)"; exit 125; }
fi
if command -v bash >/dev/null 2>&1; then exec bash -c "$2" 2>&1; fi
exec sh -c "$2" 2>&1
`

// deliver is the command run through pods/exec with the snapshot on its stdin: it
// unpacks it where the wrapper waits for it, once (a second delivery, by a runner that
// took the attempt over, reads and drops its input).
const deliver = `R=` + mountPath + `
[ -d "$R" ] && [ -w "$R" ] || R="$PWD/mcp-harness"
if [ -e "$R/.ready" ]; then cat >/dev/null; exit 0; fi
mkdir -p "$R/ws" && tar -xzf - -C "$R/ws" && : >"$R/.ready"
`

// delivered is the command that says whether the snapshot is unpacked (exit 0) already.
const delivered = `R=` + mountPath + `
[ -d "$R" ] && [ -w "$R" ] || R="$PWD/mcp-harness"
test -e "$R/.ready"
`

// jobSpec is the Job of attempt a.
func (x *Executor) jobSpec(a tasks.Attempt) (*batchv1.Job, error) {
	res, err := resources(a.Resources)
	if err != nil {
		return nil, err
	}
	sync := syncWait
	if a.Snapshot == nil {
		sync = syncNone
	}
	env := make([]corev1.EnvVar, 0, len(a.Env))
	for _, kv := range a.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		env = append(env, corev1.EnvVar{Name: name, Value: value})
	}
	labels := Labels(a.ID, a.Runner)
	annotations := map[string]string{AnnotationGraph: a.ID.GraphID, AnnotationTask: a.ID.TaskID}
	zero := int32(0)
	ttl := int32(x.cfg.TTL.Seconds())
	grace := int64(max(x.cfg.KillGrace.Seconds(), 1))
	automount := x.cfg.ServiceAccount != ""
	noLinks := false
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(a.ID), Namespace: x.ns, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			// Retries are the task graph's, not the Job's: one pod, run once.
			BackoffLimit:            &zero,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					ServiceAccountName:            x.cfg.ServiceAccount,
					AutomountServiceAccountToken:  &automount,
					EnableServiceLinks:            &noLinks,
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name:         container,
						Image:        x.cfg.Image,
						Command:      []string{"sh", "-c", wrapper, "mcp-harness", a.Cwd, a.Command, sync},
						Env:          env,
						Resources:    res,
						VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: mountPath}},
					}},
					Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}, nil
}

// resources turns what a task asks for into its container's requests and limits: the
// same value for both, so that what the scheduler reserves is what the pod may use.
func resources(r tasks.Resources) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	for _, q := range []struct {
		name corev1.ResourceName
		v    string
	}{{corev1.ResourceCPU, r.CPU}, {corev1.ResourceMemory, r.Memory}} {
		if q.v == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			return out, fmt.Errorf("resources.%s %q is not a Kubernetes quantity: %v", q.name, q.v, err)
		}
		if out.Requests == nil {
			out.Requests, out.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		out.Requests[q.name], out.Limits[q.name] = v, v
	}
	return out, nil
}
