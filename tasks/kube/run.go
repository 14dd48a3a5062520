package kube

// This file holds the attempts the executor runs (run) and the tasks.Executor methods
// over them: Start creates (or takes over) a Job and starts tending it: a goroutine per
// attempt watches it through the informers until classify says it has ended, streaming
// the snapshot in on the way and deleting the Job when the executor ends the attempt
// itself, so an attempt comes along whether or not anyone waits on it. Wait waits for
// that end, Attach reads the pod's log, Cancel deletes the Job and its pod, Status and
// List read the cluster.

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// jobNameLabel is the label the Job controller puts on a Job's pods.
const jobNameLabel = "batch.kubernetes.io/job-name"

// run is one attempt the executor holds, from Start to Release. Its fields below mu are
// guarded by it.
type run struct {
	id       tasks.AttemptID
	a        tasks.Attempt
	job      string
	takeover bool // Start found the Job there: the snapshot may be in already

	done     chan struct{} // closed by tend once the attempt has ended (final)
	released chan struct{} // closed by Release: tend stops

	mu          sync.Mutex
	wake        chan struct{} // closed (and replaced) when the Job or a pod of it changes, or a delivery ends
	place       tasks.Placement
	final       tasks.RunStatus
	seen        sightings
	cancelled   bool
	cancelAt    time.Time
	cancelGrace time.Duration
	forced      bool      // its pods were deleted with no grace (a node that is gone)
	asked       time.Time // the cluster was last asked for a Job the informers did not show
	delivering  bool      // a delivery of the snapshot is under way
	delivered   bool      // the snapshot is in the pod
	deliverErr  error     // the snapshot could not be streamed in
	deliveredTo string    // the pod it went to
}

// notify wakes everything that waits on r (Wait, Attach).
func (r *run) notify() {
	r.mu.Lock()
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()
}

// changes is the channel the next notify closes.
func (r *run) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wake
}

// watcher is the executor's view of its workspace's Jobs and pods in its namespace.
type watcher struct {
	namespace string
	informers [2]cache.SharedIndexInformer // Jobs, pods
	jobs      batchlisters.JobLister
	pods      cache.Indexer // by jobIndex
	stopCh    chan struct{}
	once      sync.Once
	running   sync.WaitGroup // the informers' Run
}

// stop ends the informers and waits until they have returned.
func (w *watcher) stop() {
	w.once.Do(func() { close(w.stopCh) })
	w.running.Wait()
}

const jobIndex = "job"

// watching starts the informers on the first call and waits, within ctx, until they have
// listed what there is.
func (x *Executor) watching(ctx context.Context) (*watcher, error) {
	if x.loadErr != nil {
		return nil, fmt.Errorf("%w: %v", tasks.ErrExecutorUnavailable, x.loadErr)
	}
	x.watchOnce.Do(func() {
		selector := labels.Set{LabelWorkspace: labelValue(x.cfg.Workspace)}.String()
		labelled := func(o *metav1.ListOptions) { o.LabelSelector = selector }
		jobs := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(x.client.batch, "jobs", x.ns, labelled),
			&batchv1.Job{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		pods := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(x.client.core, "pods", x.ns, labelled),
			&corev1.Pod{}, 0, cache.Indexers{jobIndex: func(obj any) ([]string, error) {
				if p, ok := obj.(*corev1.Pod); ok {
					return []string{p.Labels[jobNameLabel]}, nil
				}
				return nil, nil
			}})
		w := &watcher{namespace: x.ns, informers: [2]cache.SharedIndexInformer{jobs, pods}, stopCh: make(chan struct{})}
		h := cache.ResourceEventHandlerFuncs{AddFunc: x.changed, UpdateFunc: func(_, o any) { x.changed(o) }, DeleteFunc: x.changed}
		jobs.AddEventHandler(h)
		pods.AddEventHandler(h)
		w.jobs, w.pods = batchlisters.NewJobLister(jobs.GetIndexer()), pods.GetIndexer()
		for _, inf := range w.informers {
			w.running.Go(func() { inf.Run(w.stopCh) })
		}
		x.watch = w
	})
	w := x.watch
	done := ctxDone(ctx, w.stopCh)
	for _, inf := range w.informers {
		if !cache.WaitForCacheSync(done, inf.HasSynced) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %s", tasks.ErrExecutorUnavailable, x.describe(ctx.Err()))
			}
			return nil, fmt.Errorf("%w: the executor is closed", tasks.ErrExecutorUnavailable)
		}
	}
	return w, nil
}

// ctxDone is a channel closed when ctx ends or stop is closed.
func ctxDone(ctx context.Context, stop <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		close(ch)
	}()
	return ch
}

// changed wakes the run whose Job or pod obj is.
func (x *Executor) changed(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	var name string
	switch o := obj.(type) {
	case *batchv1.Job:
		name = o.Name
	case *corev1.Pod:
		name = o.Labels[jobNameLabel]
	default:
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range x.runs { // a handful: the attempts this server runs at once
		if r.job == name {
			r.notify()
		}
	}
}

// Start creates the attempt's Job, or takes over the one already there under its name.
func (x *Executor) Start(ctx context.Context, a tasks.Attempt) (tasks.Placement, error) {
	if x.loadErr != nil {
		return tasks.Placement{}, fmt.Errorf("%w: %v", tasks.ErrExecutorUnavailable, x.loadErr)
	}
	if _, err := x.watching(ctx); err != nil {
		return tasks.Placement{}, err
	}
	name := JobName(a.ID)
	x.mu.Lock()
	if r := x.runs[a.ID]; r != nil {
		x.mu.Unlock()
		return tasks.Placement{Job: r.job}, nil
	}
	x.mu.Unlock()
	job, err := x.jobSpec(a)
	if err != nil {
		return tasks.Placement{}, err
	}
	takeover := false
	_, err = x.client.createJob(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := x.client.getJob(ctx, name)
		if gerr != nil {
			return tasks.Placement{}, x.unavailable("cannot read the existing Job "+name, gerr)
		}
		if id, ok := attemptOf(existing.ObjectMeta); !ok || id.GraphID != a.ID.GraphID || id.TaskID != a.ID.TaskID || id.Attempt != a.ID.Attempt {
			return tasks.Placement{}, fmt.Errorf("a Job named %s exists in namespace %s and is not this attempt's", name, x.ns)
		}
		takeover, err = true, nil
	}
	if err != nil {
		return tasks.Placement{}, x.unavailable("cannot create Job "+name, err)
	}
	r := &run{id: a.ID, a: a, job: name, wake: make(chan struct{}), takeover: takeover,
		done: make(chan struct{}), released: make(chan struct{})}
	r.seen.created = time.Now()
	r.place.Job = name
	x.mu.Lock()
	if x.runs[a.ID] != nil { // started meanwhile by another call: that one tends it
		x.mu.Unlock()
		return tasks.Placement{Job: name}, nil
	}
	x.runs[a.ID] = r
	x.mu.Unlock()
	go x.tend(r)
	return tasks.Placement{Job: name}, nil
}

// get returns the run of id.
func (x *Executor) get(id tasks.AttemptID) (*run, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.runs[id]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("%s: %w", id, tasks.ErrUnknownAttempt)
}

// Release forgets the attempt (and stops tending it, if it still runs).
func (x *Executor) Release(id tasks.AttemptID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.runs[id]; r != nil {
		close(r.released)
		delete(x.runs, id)
	}
}

// current reads the Job and newest pod of r from the informers.
func (w *watcher) current(name string) (*batchv1.Job, *corev1.Pod) {
	job, err := w.jobs.Jobs(w.namespace).Get(name)
	if err != nil {
		job = nil
	}
	objs, _ := w.pods.ByIndex(jobIndex, name)
	var pod *corev1.Pod
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if pod == nil || p.CreationTimestamp.After(pod.CreationTimestamp.Time) {
			pod = p
		}
	}
	return job, pod
}

// limits are the executor's waits as classify takes them.
func (x *Executor) limits() limits {
	return limits{schedule: x.cfg.ScheduleTimeout, pull: x.cfg.PullTimeout, nodeGrace: x.cfg.NodeLostAfter}
}

// observe classifies r as the informers see it now.
func (x *Executor) observe(w *watcher, r *run) (verdict, *corev1.Pod) {
	job, pod := w.current(r.job)
	r.mu.Lock()
	defer r.mu.Unlock()
	return classify(r.id, job, pod, r.cancelled, &r.seen, x.limits(), time.Now()), pod
}

// notSeenAfter is how long a Job created (or taken over) may stay out of the informers'
// view before the executor asks the cluster for it directly.
const notSeenAfter = 30 * time.Second

// tend follows r from its start to its end: it streams the snapshot in once the
// container runs, ends the attempt when classify says the cluster will not run it (its
// Job then deleted), and records the end (final, done). It stops early on Release or
// Close.
func (x *Executor) tend(r *run) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.released:
		case <-r.done:
		case <-x.watch.stopCh:
		}
		cancel()
	}()
	w, err := x.watching(ctx)
	if err != nil {
		return
	}
	tick := time.NewTicker(time.Second) // the waits classify measures
	defer tick.Stop()
	for {
		changed := r.changes() // before observing: a change from here on wakes the select
		v, pod := x.observe(w, r)
		if v.running && !v.stop && r.a.Snapshot != nil {
			if err := x.deliverOnce(r, pod.Name); err != nil {
				v.st.Phase, v.st.Code, v.st.Message = tasks.PhaseEnded, tasks.CodeSpawnFailed, err.Error()
				v.stop = true
			}
		}
		if v.st.Phase == tasks.PhaseGone {
			v.st.Phase, v.st.Code = tasks.PhaseEnded, tasks.CodeNodeLost
			v.st.Message = fmt.Sprintf("its Job %s was deleted outside mcp-harness before a pod ran", r.job)
		}
		if v.stop {
			x.stopJob(r, v.st.Code == tasks.CodeNodeLost)
		}
		r.mu.Lock()
		changedPlace := v.st.Placement != r.place
		r.place = v.st.Placement
		if v.st.Phase == tasks.PhaseEnded {
			r.final = v.st
		}
		r.mu.Unlock()
		if v.st.Phase == tasks.PhaseEnded {
			close(r.done)
			r.notify()
			return
		}
		if changedPlace {
			r.notify()
		}
		x.unstick(ctx, r)
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// Wait waits until the attempt has ended: the command's exit, the executor's own verdict
// (the Job is then deleted), or the end of its deletion after Cancel.
func (x *Executor) Wait(ctx context.Context, id tasks.AttemptID, placed func(tasks.Placement)) (tasks.RunStatus, error) {
	r, err := x.get(id)
	if err != nil {
		return tasks.RunStatus{}, err
	}
	var last tasks.Placement
	for {
		changed := r.changes()
		r.mu.Lock()
		place := r.place
		r.mu.Unlock()
		if placed != nil && place != last {
			last = place
			placed(last)
		}
		select {
		case <-r.done:
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.final, nil
		default:
		}
		select {
		case <-changed:
		case <-r.done:
		case <-r.released:
			return tasks.RunStatus{}, fmt.Errorf("%s: %w", id, tasks.ErrUnknownAttempt)
		case <-ctx.Done():
			return tasks.RunStatus{}, ctx.Err()
		}
	}
}

// unstick deals with what the informers alone do not settle: a Job they never showed
// (asked for directly), and the pods of a cancelled attempt on a node that is gone, which
// never finish their deletion (deleted again with no grace).
func (x *Executor) unstick(ctx context.Context, r *run) {
	r.mu.Lock()
	since := r.seen.created
	if r.asked.After(since) {
		since = r.asked
	}
	notSeen := !r.seen.jobSeen && time.Since(since) > notSeenAfter
	force := r.cancelled && !r.forced && time.Since(r.cancelAt) > r.cancelGrace+15*time.Second
	if force {
		r.forced = true
	}
	r.mu.Unlock()
	if notSeen {
		_, err := x.client.getJob(ctx, r.job)
		r.mu.Lock()
		switch {
		case err == nil:
			// There, and the informers have not shown it yet: asked again after as long.
			// Taking it as seen would read the informers' lag as its deletion.
			r.asked = time.Now()
		case apierrors.IsNotFound(err):
			r.seen.jobSeen = true // gone: classify says so from now on
		}
		r.mu.Unlock()
	}
	if force {
		x.deletePods(context.WithoutCancel(ctx), r.job, 0)
	}
}

// stopJob deletes the Job of an attempt the executor ended itself; the pods of one whose
// node is gone are deleted with no grace (their kubelet will not confirm it).
func (x *Executor) stopJob(r *run, nodeLost bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	if err := x.client.deleteJob(ctx, r.job, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		x.log.Warn("cannot delete the Job of an attempt that ended", "job", r.job, "err", err)
	}
	if nodeLost {
		x.deletePods(ctx, r.job, 0)
	}
}

// deletePods deletes the pods of Job name with the grace given.
func (x *Executor) deletePods(ctx context.Context, name string, grace time.Duration) error {
	secs := int64(math.Ceil(max(grace, 0).Seconds()))
	err := x.client.deletePods(ctx, metav1.DeleteOptions{GracePeriodSeconds: &secs},
		metav1.ListOptions{LabelSelector: labels.Set{jobNameLabel: name}.String()})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// Cancel deletes the attempt's Job (foreground: it goes once its pods are gone) and its
// pod with grace: the container gets SIGTERM, and SIGKILL after grace. An attempt the
// executor does not hold (one nothing follows any more) is found by its Job's name.
func (x *Executor) Cancel(ctx context.Context, id tasks.AttemptID, grace time.Duration) error {
	if x.loadErr != nil {
		return fmt.Errorf("%w: %v", tasks.ErrExecutorUnavailable, x.loadErr)
	}
	name := JobName(id)
	r, err := x.get(id)
	if err == nil {
		r.mu.Lock()
		if !r.cancelled {
			r.cancelled, r.cancelAt, r.cancelGrace = true, time.Now(), grace
		}
		r.mu.Unlock()
	}
	fg := metav1.DeletePropagationForeground
	err = x.client.deleteJob(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	switch {
	case apierrors.IsNotFound(err) && r == nil:
		return fmt.Errorf("%s: %w", id, tasks.ErrUnknownAttempt)
	case err != nil && !apierrors.IsNotFound(err):
		return x.unavailable("cannot delete Job "+name, err)
	}
	if err := x.deletePods(ctx, name, grace); err != nil {
		return x.unavailable("cannot delete the pod of Job "+name, err)
	}
	if r != nil {
		r.notify()
	}
	return nil
}

// Status says how the attempt is: from the informers for an attempt this executor holds,
// else from the cluster directly (a Job it does not hold, e.g. before taking one over).
func (x *Executor) Status(ctx context.Context, id tasks.AttemptID) (tasks.RunStatus, error) {
	if r, err := x.get(id); err == nil {
		select {
		case <-r.done:
			return r.final, nil
		default:
		}
		w, err := x.watching(ctx)
		if err != nil {
			return tasks.RunStatus{}, err
		}
		v, _ := x.observe(w, r)
		return v.st, nil
	}
	if x.loadErr != nil {
		return tasks.RunStatus{}, fmt.Errorf("%w: %v", tasks.ErrExecutorUnavailable, x.loadErr)
	}
	name := JobName(id)
	job, err := x.client.getJob(ctx, name)
	if apierrors.IsNotFound(err) {
		return tasks.RunStatus{ID: id, Phase: tasks.PhaseGone, Placement: tasks.Placement{Job: name}}, nil
	}
	if err != nil {
		return tasks.RunStatus{}, x.unavailable("cannot read Job "+name, err)
	}
	pods, err := x.client.listPods(ctx, metav1.ListOptions{LabelSelector: labels.Set{jobNameLabel: name}.String()})
	if err != nil {
		return tasks.RunStatus{}, x.unavailable("cannot list the pods of Job "+name, err)
	}
	return x.statusOf(id, job, newest(pods.Items)), nil
}

// statusOf classifies a Job and pod read directly, with no waits measured.
func (x *Executor) statusOf(id tasks.AttemptID, job *batchv1.Job, pod *corev1.Pod) tasks.RunStatus {
	seen := sightings{created: time.Now(), jobSeen: true}
	return classify(id, job, pod, false, &seen, x.limits(), time.Now()).st
}

func newest(pods []corev1.Pod) *corev1.Pod {
	var out *corev1.Pod
	for i := range pods {
		if out == nil || pods[i].CreationTimestamp.After(out.CreationTimestamp.Time) {
			out = &pods[i]
		}
	}
	return out
}

// List reports the attempts whose Jobs are labelled with workspace, whichever runner
// started them.
func (x *Executor) List(ctx context.Context, workspace string) ([]tasks.RunStatus, error) {
	if x.loadErr != nil {
		return nil, fmt.Errorf("%w: %v", tasks.ErrExecutorUnavailable, x.loadErr)
	}
	sel := labels.Set{LabelWorkspace: labelValue(workspace)}.String()
	jobs, err := x.client.listJobs(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, x.unavailable("cannot list Jobs", err)
	}
	pods, err := x.client.listPods(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, x.unavailable("cannot list pods", err)
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		byJob[p.Labels[jobNameLabel]] = append(byJob[p.Labels[jobNameLabel]], p)
	}
	var out []tasks.RunStatus
	for i := range jobs.Items {
		j := &jobs.Items[i]
		id, ok := attemptOf(j.ObjectMeta)
		if !ok {
			continue
		}
		id.Workspace = workspace
		out = append(out, x.statusOf(id, j, newest(byJob[j.Name])))
	}
	slices.SortFunc(out, func(a, b tasks.RunStatus) int { return strings.Compare(a.Placement.Job, b.Placement.Job) })
	return out, nil
}

// Attach follows the pod's log from byte offset on: it waits for the container to start,
// then reads pods/log with follow, dropping the first offset bytes (the log API has no
// byte offset; what the task's log has is read again and skipped). An attempt that ended
// without its container starting has no output: the reader is empty.
func (x *Executor) Attach(ctx context.Context, id tasks.AttemptID, offset int64) (io.ReadCloser, error) {
	r, err := x.get(id)
	if err != nil {
		return nil, err
	}
	w, err := x.watching(ctx)
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	for {
		changed := r.changes()
		var v verdict
		v, pod = x.observe(w, r)
		if v.started {
			break
		}
		if v.st.Phase == tasks.PhaseEnded || v.st.Phase == tasks.PhaseGone || v.stop {
			return io.NopCloser(strings.NewReader("")), nil
		}
		select {
		case <-changed:
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rc, err := x.client.podLogs(ctx, pod.Name, &corev1.PodLogOptions{Container: container, Follow: true})
	if err != nil {
		return nil, x.unavailable("cannot read the log of pod "+pod.Name, err)
	}
	if offset > 0 {
		n, err := io.CopyN(io.Discard, rc, offset)
		if err != nil {
			rc.Close()
			if err == io.EOF {
				return nil, fmt.Errorf("the log of pod %s has %d bytes, fewer than the %d the task's log has of it", pod.Name, n, offset)
			}
			return nil, x.unavailable("cannot read the log of pod "+pod.Name, err)
		}
	}
	return rc, nil
}
