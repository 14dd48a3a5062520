package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// executor "kubernetes" with no cluster configured, or one that does not answer, is
// refused at submit with EXECUTOR_UNAVAILABLE and the reason, and nothing is stored. No
// cluster needed: these are the cases without one.
func TestE2E_KubeUnavailable(t *testing.T) {
	dead := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(dead, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: tasks}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"NotConfigured", nil, "no Kubernetes cluster is configured"},
		{"NotAnswering", []string{"--kube-config", dead}, "the Kubernetes API server at https://127.0.0.1:1 does not answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			cmd := exec.Command(binPath, append([]string{"stdio", "--workspace", ws, "--log-level", "info"}, c.args...)...)
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "HOME="+t.TempDir()) // no ~/.kube/config
			s := startCmd(t, cmd)
			s.initialize()
			res := s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "idempotencyKey": "k", "tasks": []any{
				map[string]any{"id": "a", "command": "true"}, map[string]any{"id": "b", "command": "true", "executor": "local"}}})
			text := resultText(res)
			if res["isError"] != true || !strings.HasPrefix(text, "EXECUTOR_UNAVAILABLE: ") || !strings.Contains(text, c.want) {
				t.Errorf("tasks_run = %q, want EXECUTOR_UNAVAILABLE saying %q", text, c.want)
			}
			list := structuredOf(t, s.toolCall("tasks_list", map[string]any{}))
			if n := len(list["graphs"].([]any)); n != 0 {
				t.Errorf("a refused graph left %d graph(s) in the store", n)
			}
			if entries, _ := os.ReadDir(filepath.Join(ws, ".mcp-harness", "logs")); len(entries) != 0 {
				t.Errorf("a refused graph left %d log director(ies)", len(entries))
			}
			// Local tasks still run on this server.
			res = s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}})
			if res["isError"] == true {
				t.Errorf("a local graph on a server without a cluster: %s", resultText(res))
			}
		})
	}
}
