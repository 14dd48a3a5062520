package server

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	remotehelper "github.com/mcp-harness/mcp-harness/internal/remote"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tasks/snapshot"
)

// RemoteConfig is where tasks that name the kubernetes executor run (--kube-*), and where
// finished graphs' archives are kept (--artifacts-url). Its zero value uses the standard
// kubeconfig rules ($KUBECONFIG, ~/.kube/config, a pod's service account), the defaults of
// package kube, and the local artifacts directory.
type RemoteConfig struct {
	KubeConfig, KubeContext, KubeNamespace string
	KubeImage, KubeServiceAccount          string
	KubeMaxPods                            int           // pods at once over all graphs; 0 = no cap
	KubeSync                               snapshot.Mode // "" = snapshot.Git
	KubeScheduleTimeout                    time.Duration // 0 = the default of package tasks/kube
	ArtifactsURL                           string        // "" = the artifacts directory
}

// remote is what a runner's engine gets of RemoteConfig, opened: the Kubernetes executor
// (which contacts its cluster only when a task needs it) and the archives' bucket.
type remote struct {
	cfg    RemoteConfig
	kube   *remotehelper.KubeExecutor
	bucket *objstore.Bucket
}

// openRemote opens what cfg names for workspace ws. Only a bucket URL that cannot be
// opened is an error; a cluster that cannot be reached is the tasks' problem, not the
// server's (they are refused with EXECUTOR_UNAVAILABLE, saying why).
func openRemote(ctx context.Context, cfg RemoteConfig, ws *workspace.Workspace, log *slog.Logger) (*remote, error) {
	hostname, _ := os.Hostname()
	// The executor runs in the process's remote helper, which starts at its first call:
	// a server whose tasks never name the kubernetes executor never starts it.
	remotehelper.Shared.UseLog(log)
	r := &remote{cfg: cfg, kube: remotehelper.NewKube(remotehelper.Shared, remotehelper.KubeConfig{
		Kubeconfig: cfg.KubeConfig, Context: cfg.KubeContext, Namespace: cfg.KubeNamespace,
		Image: cfg.KubeImage, ServiceAccount: cfg.KubeServiceAccount, ScheduleTimeout: cfg.KubeScheduleTimeout,
		Workspace: tasks.WorkspaceID(hostname, ws.Root),
	})}
	if cfg.ArtifactsURL != "" {
		b, err := objstore.Open(ctx, cfg.ArtifactsURL)
		if err != nil {
			return nil, err
		}
		r.bucket = b
	}
	return r, nil
}

// apply gives an engine's config what it needs of r.
func (r *remote) apply(c *tasks.Config) {
	c.Kubernetes, c.MaxPods, c.Sync, c.Artifacts = r.kube, r.cfg.KubeMaxPods, r.cfg.KubeSync, r.bucket
}

// close lets go of r once its engine is closed.
func (r *remote) close() error {
	if r == nil {
		return nil
	}
	r.kube.Close()
	if r.bucket != nil {
		return r.bucket.Close()
	}
	return nil
}
