// Package kube is the task engine's Kubernetes executor (tasks.Executor): each attempt of a
// task that names the kubernetes executor runs as one Job (client-go) in the server's
// namespace, whose one pod gets the graph's workspace snapshot through pods/exec and runs
// the task's command in it, while the engine follows the pod's log into the task's own log.
//
// What it decides, and why:
//   - One Job per attempt, named after the attempt's identity (JobName: workspace, graph,
//     task, attempt; DNS-safe, unique), with backoffLimit 0 (retries are the graph's) and
//     ttlSecondsAfterFinished. Start is idempotent: a Job of the same name is taken over,
//     never doubled, which is how a runner that adopted a gone runner's graph re-attaches.
//   - Labels (workspace, graph, task, attempt, runner) find a workspace's Jobs again (List);
//     annotations hold the exact ids.
//   - Jobs and pods are watched through informers on the namespace, filtered by the
//     workspace's label, so waiting on many attempts costs one watch, not a poll each.
//   - What the pod's state means is classify's (classify.go): a pod never scheduled within
//     the schedule timeout is UNSCHEDULABLE, an image that cannot be pulled or a container
//     that cannot start is SPAWN_FAILED with the pod's reason, a pod whose node stopped
//     reporting (or that was evicted or deleted) is NODE_LOST; in each case the Job is
//     deleted. Nothing waits for ever.
//   - Cancel deletes the pod (with the grace asked) and the Job (foreground propagation);
//     the attempt has ended once both are gone. A pod on a node that is gone never finishes
//     its deletion: it is deleted with no grace after the grace and a margin.
//   - The snapshot is streamed into the running container through pods/exec (exec.go) and
//     unpacked where the container's wrapper waits for it (job.go). The command runs there,
//     in the task's directory, with the task's environment as literal values (the same env
//     policy as local tasks: the engine gives what a local task gets, less what names this
//     machine). A pod is confined by what the cluster gives it: its image, its service
//     account (none mounted unless --kube-service-account names one), its namespace.
//   - A call to a cluster that does not answer is reported as tasks.ErrExecutorUnavailable:
//     the engine keeps the task pending (or, running, keeps following it) and tries again.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// Config configures an Executor.
type Config struct {
	// Kubeconfig is the kubeconfig file; "" uses the standard rules ($KUBECONFIG, then
	// ~/.kube/config), and in a pod its service account. Context picks a context of it
	// ("" = its current one).
	Kubeconfig, Context string
	// Namespace is where Jobs go; "" = the context's namespace, else "default".
	Namespace string
	// Image is what task pods run (a shell, tar and gzip in it: the snapshot is unpacked
	// with them); "" = DefaultImage.
	Image string
	// ServiceAccount is the task pods' service account; "" = the namespace's default,
	// with no token mounted (a task needs no access to the cluster).
	ServiceAccount string
	// Workspace is the workspace's id (tasks.WorkspaceID): the Jobs watched are the ones
	// labelled with it.
	Workspace string
	// ScheduleTimeout bounds how long a pod may wait for a node (0 = DefaultScheduleTimeout);
	// PullTimeout how long its image may keep failing to pull (0 = DefaultPullTimeout);
	// NodeLostAfter how long a running pod's node may stay NotReady (0 = at once: the
	// cluster already waited its node-monitor grace period).
	ScheduleTimeout, PullTimeout, NodeLostAfter time.Duration
	// KillGrace is the pods' termination grace period (0 = tasks.DefaultKillGrace).
	KillGrace time.Duration
	// TTL is how long a finished Job stays (ttlSecondsAfterFinished; 0 = DefaultTTL).
	TTL    time.Duration
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultImage           = tasks.DefaultKubeImage
	DefaultScheduleTimeout = tasks.DefaultKubeScheduleTimeout
	DefaultPullTimeout     = 2 * time.Minute
	DefaultTTL             = time.Hour
)

// Executor runs task attempts as Jobs on a cluster. New makes one without contacting the
// cluster; it watches its namespace from the first attempt on, until Close.
type Executor struct {
	cfg     Config
	log     *slog.Logger
	ns      string
	host    string // the API server, for messages
	rest    *rest.Config
	client  *client
	loadErr error // why no client could be made; every call says it

	checkMu sync.Mutex
	checked time.Time // the last Check that found the cluster answering

	watchOnce sync.Once
	watch     *watcher // informers of the namespace's Jobs and pods (run.go)

	mu   sync.Mutex
	runs map[tasks.AttemptID]*run
}

// New returns an executor for the cluster cfg names. A kubeconfig that cannot be read is
// no error here: every call then reports it (Check), so that a server without a cluster
// starts, and refuses only the tasks that need one.
func New(cfg Config) *Executor {
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.ScheduleTimeout <= 0 {
		cfg.ScheduleTimeout = DefaultScheduleTimeout
	}
	if cfg.PullTimeout <= 0 {
		cfg.PullTimeout = DefaultPullTimeout
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = tasks.DefaultKillGrace
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	x := &Executor{cfg: cfg, log: cfg.Logger, runs: map[tasks.AttemptID]*run{}}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	x.rest, x.loadErr = cc.ClientConfig()
	if x.loadErr != nil {
		x.loadErr = fmt.Errorf("no Kubernetes cluster is configured (%v); start the server with --kube-config (or --kube-context)", x.loadErr)
		return x
	}
	x.ns = cfg.Namespace
	if x.ns == "" {
		if ns, _, err := cc.Namespace(); err == nil && ns != "" {
			x.ns = ns
		} else {
			x.ns = "default"
		}
	}
	x.host = x.rest.Host
	// Many attempts are watched and followed at once: client-go's default of 5 requests a
	// second would queue their starts and deletes.
	x.rest.QPS, x.rest.Burst = 50, 100
	if x.client, x.loadErr = newClient(x.rest, x.ns); x.loadErr != nil {
		x.loadErr = fmt.Errorf("the Kubernetes configuration cannot be used: %v", x.loadErr)
	}
	return x
}

// Name is tasks.ExecutorKubernetes.
func (x *Executor) Name() tasks.ExecutorName { return tasks.ExecutorKubernetes }

// Namespace is where the executor's Jobs go.
func (x *Executor) Namespace() string { return x.ns }

// checkFor is how long a Check that found the cluster answering holds.
const checkFor = 10 * time.Second

// Check says whether the cluster answers and lets this server list Jobs in its namespace
// (a cheap call that needs the same access as the rest).
func (x *Executor) Check(ctx context.Context) error {
	if x.loadErr != nil {
		return fmt.Errorf("%w: %v", tasks.ErrExecutorUnavailable, x.loadErr)
	}
	x.checkMu.Lock()
	defer x.checkMu.Unlock()
	if time.Since(x.checked) < checkFor {
		return nil
	}
	_, err := x.client.listJobs(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("%w: %s", tasks.ErrExecutorUnavailable, x.describe(err))
	}
	x.checked = time.Now()
	return nil
}

// describe says in words why a call to the cluster failed.
func (x *Executor) describe(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("the cluster at %s refuses this server's credentials in namespace %s (see the README's RBAC for what it needs): %v", x.host, x.ns, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("the cluster at %s does not accept this server's credentials: %v", x.host, err)
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("namespace %s was not found on the cluster at %s: %v", x.ns, x.host, err)
	}
	return fmt.Sprintf("the Kubernetes API server at %s does not answer: %v", x.host, err)
}

// unavailable wraps err as tasks.ErrExecutorUnavailable when it says the cluster could not
// be reached or could not answer now (a retry may succeed), and says why either way.
func (x *Executor) unavailable(what string, err error) error {
	if transient(err) {
		return fmt.Errorf("%w: %s: %s", tasks.ErrExecutorUnavailable, what, x.describe(err))
	}
	return fmt.Errorf("%s: %v", what, err)
}

// transient reports an error after which the same call may succeed: the API server did
// not answer, or answered that it cannot now.
func transient(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case err == nil:
		return false
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	case errors.As(err, &netErr), errors.As(err, &urlErr):
		return true
	}
	return false
}

// Close stops watching the namespace. Attempts keep running on the cluster.
func (x *Executor) Close() {
	if x.watch != nil {
		x.watch.stop()
	}
}
