package cli

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/tasks"
	wssnapshot "github.com/mcp-harness/mcp-harness/tasks/snapshot"
)

// remoteFlagNames are the flags of where Kubernetes tasks run and archives are kept: a
// detached runner takes them over from its server (runnerCommand).
var remoteFlagNames = []string{"kube-config", "kube-context", "kube-namespace", "kube-image", "kube-service-account",
	"kube-max-pods", "kube-sync", "kube-schedule-timeout", "artifacts-url"}

// remoteFlags are those flags' values; config checks them into a server.RemoteConfig.
type remoteFlags struct {
	cfg  server.RemoteConfig
	sync string
}

// addRemoteFlags defines the Kubernetes and object storage flags on f.
func addRemoteFlags(f *pflag.FlagSet, r *remoteFlags) {
	c := &r.cfg
	f.StringVar(&c.KubeConfig, "kube-config", "", "the kubeconfig of the cluster Kubernetes tasks run on (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	f.StringVar(&c.KubeContext, "kube-context", "", "the kubeconfig context to use (default: its current context)")
	f.StringVar(&c.KubeNamespace, "kube-namespace", "", "the namespace of the tasks' Jobs (default: the context's, else default)")
	f.StringVar(&c.KubeImage, "kube-image", tasks.DefaultKubeImage, "the image Kubernetes tasks run in (it needs sh, tar and gzip)")
	f.StringVar(&c.KubeServiceAccount, "kube-service-account", "", "the tasks' pods' service account (default: the namespace's, with no token mounted)")
	f.IntVar(&c.KubeMaxPods, "kube-max-pods", 16, "the most pods running at once, over all graphs; more Kubernetes tasks wait for a slot")
	f.StringVar(&r.sync, "kube-sync", string(wssnapshot.Git), "what of the workspace a Kubernetes task gets: git (tracked and untracked files not ignored), all (every file but the state dir) or none")
	f.DurationVar(&c.KubeScheduleTimeout, "kube-schedule-timeout", tasks.DefaultKubeScheduleTimeout, "how long a pod may wait for a node before its task fails UNSCHEDULABLE")
	f.StringVar(&c.ArtifactsURL, "artifacts-url", "", "object storage for finished graphs' archives instead of --artifacts-dir: s3://bucket/prefix?region=...&endpoint=... (any S3-compatible store) or file:///a/shared/directory")
}

// config checks the flags' values; a mistake is a usageError.
func (r *remoteFlags) config() (server.RemoteConfig, error) {
	c := r.cfg
	c.KubeSync = wssnapshot.Mode(r.sync)
	if !c.KubeSync.Valid() {
		return c, usagef("--kube-sync %q: want git, all or none", r.sync)
	}
	if c.KubeMaxPods < 1 {
		return c, usagef("--kube-max-pods %d: want 1 or more", c.KubeMaxPods)
	}
	if c.KubeScheduleTimeout <= 0 {
		c.KubeScheduleTimeout = tasks.DefaultKubeScheduleTimeout
	}
	if c.ArtifactsURL != "" {
		// Opened here to check it (its scheme, bucket and parameters); the server opens it
		// again. Nothing is contacted.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := objstore.Open(ctx, c.ArtifactsURL)
		if err != nil {
			return c, usagef("--artifacts-url: %v", err)
		}
		b.Close()
	}
	return c, nil
}
