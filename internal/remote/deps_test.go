package remote

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// The server's command, and this package that it reaches the helper with, link neither
// client-go nor the AWS SDK: that is what the helper is for (the package doc says why).
// The helper's own package may (and does).
func TestServerLinksNoRemoteClients(t *testing.T) {
	banned := map[string]string{
		"k8s.io":                                   "client-go and the Kubernetes API types run in the remote helper, mcp-harness-remote, not in the server",
		"sigs.k8s.io":                              "client-go's dependencies run in the remote helper, not in the server",
		"github.com/aws":                           "the AWS SDK runs in the remote helper, mcp-harness-remote, not in the server",
		deptest.Module + "/tasks/kube":             "the Kubernetes executor runs in the remote helper; the server reaches it through this package",
		deptest.Module + "/internal/objstore/s3":   "the S3 bucket runs in the remote helper; the server reaches it through this package",
		deptest.Module + "/internal/remote/helper": "the helper's side is the helper's command alone",
	}
	for _, pkg := range []string{deptest.Module, "."} {
		for _, goos := range []string{"linux", "darwin"} {
			deptest.DepChecker{Pkg: pkg, Banned: banned, GOOS: goos}.Check(t)
		}
	}
}
