//go:build e2e && linux

package e2e

// Kubernetes tasks end to end, through the built server, against the test cluster
// (e2e/cluster: a real control plane, etcd, and virtual-kubelet nodes that run pods as
// local processes). Run with the cluster's environment:
//
//	e2e/cluster/build.sh && eval "$(e2e/cluster/up.sh | head -1)"   # or TESTCLUSTER_RUN=... e2e/cluster/up.sh
//	set -a; . "$TESTCLUSTER_RUN/env"; set +a
//	go test -race -tags e2e -run 'Kube|S3' ./...

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcp-harness/mcp-harness/tasks/kube"
)

// cluster is the running test cluster, as its env file describes it.
type cluster struct {
	kubeconfig, namespace, run string
	nodes                      []string
	// client is client-go's dynamic client: the generated clientset (every API group's
	// typed client) is not linked into the module, it costs CI too much to compile.
	client dynamic.Interface
}

// The resources the tests read and make, for the dynamic client.
var (
	jobsGVR            = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	podsGVR            = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	namespacesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	serviceAccountsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	rolesGVR           = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	roleBindingsGVR    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// toUnstructured is a typed object as the dynamic client takes it. The object must have
// its apiVersion and kind set: the dynamic client sends nothing without them.
func toUnstructured(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("converting %T: %v", obj, err)
	}
	return &unstructured.Unstructured{Object: m}
}

// itemsAs converts a list's items to their typed objects.
func itemsAs[T any](l *unstructured.UnstructuredList) ([]T, error) {
	out := make([]T, len(l.Items))
	for i := range l.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("converting %s %s to %T: %w", l.Items[i].GetKind(), l.Items[i].GetName(), out[i], err)
		}
	}
	return out, nil
}

// needCluster skips the test unless a test cluster's environment is set.
func needCluster(t *testing.T) cluster {
	t.Helper()
	c := cluster{kubeconfig: os.Getenv("KUBECONFIG"), namespace: os.Getenv("TESTCLUSTER_NAMESPACE"), run: os.Getenv("TESTCLUSTER_RUN")}
	if c.kubeconfig == "" || c.namespace == "" || c.run == "" {
		t.Skip("no test cluster: start one with e2e/cluster/build.sh && e2e/cluster/up.sh, then set -a; . $TESTCLUSTER_RUN/env; set +a")
	}
	c.nodes = strings.Split(os.Getenv("TESTCLUSTER_NODE_NAMES"), ",")
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.client, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

// kubeServer starts a server on ws with the cluster as its Kubernetes executor.
func kubeServer(t *testing.T, c cluster, ws string, args ...string) *server {
	t.Helper()
	s := startServer(t, ws, append([]string{"--kube-config", c.kubeconfig, "--kube-namespace", c.namespace, "--kube-image", "ignored-by-proclet:1"}, args...)...)
	s.initialize()
	return s
}

// graphPods lists the graph's pods and Jobs that are still there.
func (c cluster) graphObjects(t *testing.T, graphID string) (jobs, pods []string) {
	t.Helper()
	sel := kube.LabelGraph + "=" + graphID
	jl, err := c.client.Resource(jobsGVR).Namespace(c.namespace).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jl.Items {
		jobs = append(jobs, j.GetName())
	}
	pl, err := c.client.Resource(podsGVR).Namespace(c.namespace).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pl.Items {
		pods = append(pods, p.GetName())
	}
	return jobs, pods
}

// workspace makes a workspace with a file for tasks to read.
func kubeWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data", "input.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// statusOf reads one task's status and its log from the start.
func (s *server) taskStatus(graphID, taskID string) map[string]any {
	s.t.Helper()
	st := structuredOf(s.t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "taskIds": []string{taskID}, "logOffset": 0}))
	return tasksOf(st)[taskID]
}

func logText(task map[string]any) string {
	l, _ := task["log"].(map[string]any)
	s, _ := l["text"].(string)
	return s
}

// A graph with dependencies whose pods read the workspace; a failure and its dependent;
// a local task beside the remote ones; where each ran.
func TestKube_GraphWithDependencies(t *testing.T) {
	c := needCluster(t)
	ws := kubeWorkspace(t)
	s := kubeServer(t, c, ws)
	res := s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "read", "command": "cat data/input.txt; echo to-stderr >&2; echo done"},
		map[string]any{"id": "count", "command": "wc -l < input.txt; echo \"X=$X\"", "cwd": "data", "dependsOn": []string{"read"},
			"env": map[string]any{"X": "from the task"}, "resources": map[string]any{"cpu": "100m", "memory": "64Mi"}},
		map[string]any{"id": "fails", "command": "echo about to fail; exit 3"},
		map[string]any{"id": "after-fail", "command": "true", "dependsOn": []string{"fails"}},
		map[string]any{"id": "here", "command": "echo local $PWD", "executor": "local", "dependsOn": []string{"read"}},
	}})
	if res["isError"] == true {
		t.Fatalf("tasks_run: %s", resultText(res))
	}
	if txt := resultText(res); !strings.Contains(txt, "4 task(s) run in pods on Kubernetes") {
		t.Errorf("tasks_run text does not say which tasks run in pods: %q", txt)
	}
	graphID := structuredOf(t, res)["graphId"].(string)
	st := s.waitGraph(graphID)
	ts := tasksOf(st)
	want := map[string]string{"read": "succeeded", "count": "succeeded", "fails": "failed", "after-fail": "skipped", "here": "succeeded"}
	for id, status := range want {
		if ts[id]["status"] != status {
			t.Errorf("%s = %v (%v: %v), want %s", id, ts[id]["status"], ts[id]["errorCode"], ts[id]["message"], status)
		}
	}
	if ts["fails"]["errorCode"] != "EXIT_NONZERO" || ts["fails"]["exitCode"] != float64(3) {
		t.Errorf("fails = %v/%v, want EXIT_NONZERO/3", ts["fails"]["errorCode"], ts["fails"]["exitCode"])
	}
	if ts["after-fail"]["errorCode"] != "UPSTREAM_FAILED" {
		t.Errorf("after-fail = %v, want UPSTREAM_FAILED", ts["after-fail"]["errorCode"])
	}
	if got := logText(s.taskStatus(graphID, "read")); got != "alpha\nbeta\ngamma\nto-stderr\ndone\n" {
		t.Errorf("read's log = %q: the workspace's file, stderr interleaved, in order", got)
	}
	if got := logText(s.taskStatus(graphID, "count")); got != "3\nX=from the task\n" {
		t.Errorf("count's log = %q, want the line count of data/input.txt (run in data) and its env", got)
	}
	for _, id := range []string{"read", "count", "fails"} {
		tk := ts[id]
		pod, _ := tk["pod"].(string)
		node, _ := tk["node"].(string)
		if tk["executor"] != "kubernetes" || !strings.HasPrefix(pod, "mh-") || !slices.Contains(c.nodes, node) {
			t.Errorf("%s ran on executor %v, pod %v, node %v; want kubernetes, a pod of ours, one of %v", id, tk["executor"], tk["pod"], tk["node"], c.nodes)
		}
		if tk["sandbox"] != nil {
			t.Errorf("%s in a pod reports sandbox %v, want null (its pod confines it)", id, tk["sandbox"])
		}
	}
	if ts["here"]["executor"] != "local" || ts["here"]["pod"] != nil || ts["here"]["node"] != nil {
		t.Errorf("here = executor %v, pod %v, node %v; want local, null, null", ts["here"]["executor"], ts["here"]["pod"], ts["here"]["node"])
	}
	if got := logText(s.taskStatus(graphID, "here")); got != "local "+ws+"\n" {
		t.Errorf("here's log = %q", got)
	}
	// A task in a pod takes no sandbox or network: refused, nothing stored.
	res = s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "x", "command": "true", "executor": "kubernetes", "sandbox": "read-only"}}})
	if res["isError"] != true || !strings.HasPrefix(resultText(res), "INVALID_ARGUMENT: ") || !strings.Contains(resultText(res), "confined by its pod") {
		t.Errorf("a kubernetes task with a sandbox = %s, want INVALID_ARGUMENT", resultText(res))
	}
}

// Cancel of a running pod: the task is cancelled, and its Job and pod are gone.
func TestKube_Cancel(t *testing.T) {
	c := needCluster(t)
	s := kubeServer(t, c, kubeWorkspace(t))
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "long", "command": "echo started; sleep 600"},
		map[string]any{"id": "next", "command": "true", "dependsOn": []string{"long"}},
	}}))["graphId"].(string)
	waitLog(t, s, graphID, "long", "started\n")
	res := structuredOf(t, s.toolCall("tasks_cancel", map[string]any{"graphId": graphID, "taskIds": []string{"long"}}))
	t.Logf("tasks_cancel: %v", res["tasks"])
	st := s.waitGraph(graphID)
	ts := tasksOf(st)
	if ts["long"]["status"] != "cancelled" || ts["next"]["status"] != "skipped" {
		t.Errorf("after cancel: long %v, next %v; want cancelled, skipped", ts["long"]["status"], ts["next"]["status"])
	}
	// The cancel settled once the pod was gone: its Job and pod are not there any more.
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, pods := c.graphObjects(t, graphID)
		if len(jobs)+len(pods) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the cancel, Jobs %v and pods %v of the graph are still there", jobs, pods)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

// waitLog waits until a task's log holds want.
func waitLog(t *testing.T, s *server, graphID, taskID, want string) string {
	t.Helper()
	deadline := time.Now().Add(2 * e2eWait)
	for {
		got := logText(s.taskStatus(graphID, taskID))
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's log = %q, still without %q", taskID, got, want)
		}
		time.Sleep(200 * time.Millisecond) // polling a condition with a deadline
	}
}

// A server killed with SIGKILL while a pod runs: its successor re-attaches, the task
// succeeds (not RUNNER_RESTARTED), and its log is complete with no line twice.
func TestKube_RestartReattaches(t *testing.T) {
	c := needCluster(t)
	ws := kubeWorkspace(t)
	// A short lease: the successor judges the killed server gone in seconds.
	s := kubeServer(t, c, ws, "--lease", "2s", "--stale-after", "1s")
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "count", "command": "for i in $(seq 1 40); do echo line $i; sleep 0.1; done"},
		map[string]any{"id": "after", "command": "echo after", "dependsOn": []string{"count"}},
	}}))["graphId"].(string)
	waitLog(t, s, graphID, "count", "line 5\n")
	s.signal(syscall.SIGKILL)
	s.waitExit()

	s2 := kubeServer(t, c, ws, "--lease", "2s", "--stale-after", "1s")
	st := s2.waitGraph(graphID)
	ts := tasksOf(st)
	if ts["count"]["status"] != "succeeded" || ts["after"]["status"] != "succeeded" {
		t.Fatalf("after the restart: count %v (%v: %v), after %v; want both succeeded",
			ts["count"]["status"], ts["count"]["errorCode"], ts["count"]["message"], ts["after"]["status"])
	}
	got := logText(s2.taskStatus(graphID, "count"))
	var want strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got != want.String() {
		t.Errorf("the log after re-attaching = %q, want lines 1 to 40 once each", got)
	}
	if ts["count"]["attempt"] != float64(1) {
		t.Errorf("count ran %v attempts, want 1: the successor followed the pod, it did not start another", ts["count"]["attempt"])
	}
}

// 40 tasks over several nodes, never more pods at once than --kube-max-pods.
func TestKube_MaxPods(t *testing.T) {
	c := needCluster(t)
	const n, maxPods = 40, 6
	s := kubeServer(t, c, kubeWorkspace(t), "--kube-max-pods", strconv.Itoa(maxPods))
	var list []any
	for i := range n {
		list = append(list, map[string]any{"id": fmt.Sprintf("t%02d", i), "command": "sleep 0.5; echo $HOSTNAME"})
	}
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "maxParallel": n, "tasks": list}))["graphId"].(string)
	peak := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			pl, err := c.client.Resource(podsGVR).Namespace(c.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelGraph + "=" + graphID})
			if err == nil {
				items, err := itemsAs[corev1.Pod](pl)
				if err != nil {
					t.Errorf("sampling the graph's pods: %v", err)
				}
				live := 0
				for _, p := range items {
					if p.Status.Phase != "Succeeded" && p.Status.Phase != "Failed" {
						live++
					}
				}
				peak = max(peak, live)
			}
			st := structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 0}))
			if st["status"] != "running" {
				return
			}
			if running := st["progress"].(map[string]any)["running"].(float64); int(running) > maxPods {
				t.Errorf("%v tasks running at once, over --kube-max-pods %d", running, maxPods)
			}
			time.Sleep(50 * time.Millisecond) // sampling the pods while the graph runs
		}
	}()
	<-done
	st := s.waitGraph(graphID)
	if st["status"] != "succeeded" {
		t.Fatalf("graph = %v: %v", st["status"], st["progress"])
	}
	if peak > maxPods {
		t.Errorf("%d pods at once, over --kube-max-pods %d", peak, maxPods)
	}
	// The workspace was packed once for the graph's 40 pods, not once a pod.
	if made := strings.Count(s.stderr.String(), "made the workspace snapshot for the graph's remote tasks"); made != 1 {
		t.Errorf("the server made the graph's workspace snapshot %d times, want once for its %d tasks", made, n)
	}
	nodes := map[string]bool{}
	var page []any
	cursor := ""
	for {
		args := map[string]any{"graphId": graphID, "logTail": 0}
		if cursor != "" {
			args["cursor"] = cursor
		}
		st := structuredOf(t, s.toolCall("tasks_status", args))
		page = append(page, st["tasks"].([]any)...)
		next, _ := st["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	for _, x := range page {
		if node, ok := x.(map[string]any)["node"].(string); ok {
			nodes[node] = true
		}
	}
	t.Logf("%d tasks, at most %d pods at once (cap %d), on nodes %v", n, peak, maxPods, nodes)
	if len(nodes) < 2 {
		t.Errorf("the tasks ran on %d node(s) %v, want them spread over several", len(nodes), nodes)
	}
}

// A pod that no node can take fails UNSCHEDULABLE once --kube-schedule-timeout has
// passed, with the scheduler's reason, and its Job is deleted: no hang.
func TestKube_Unschedulable(t *testing.T) {
	c := needCluster(t)
	s := kubeServer(t, c, kubeWorkspace(t), "--kube-schedule-timeout", "3s")
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "huge", "command": "true", "resources": map[string]any{"cpu": "500", "memory": "64Mi"}},
	}}))["graphId"].(string)
	st := s.waitGraph(graphID)
	huge := tasksOf(st)["huge"]
	msg, _ := huge["message"].(string)
	if huge["status"] != "failed" || huge["errorCode"] != "UNSCHEDULABLE" || !strings.Contains(msg, "Insufficient cpu") {
		t.Errorf("huge = %v/%v %q, want failed/UNSCHEDULABLE naming Insufficient cpu", huge["status"], huge["errorCode"], msg)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, pods := c.graphObjects(t, graphID)
		if len(jobs)+len(pods) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unschedulable task's Job %v and pod %v are still there", jobs, pods)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

// The Role the README gives ("RBAC the server needs") is enough: a server whose only
// credentials are a service account bound to it, in a namespace of the test's own, runs a
// graph whose pods read the workspace, cancels a running task (its Job and pod deleted)
// and sweeps for attempts nothing follows, all without a refusal.
func TestKube_ReadmeRoleIsEnough(t *testing.T) {
	c := needCluster(t)
	role, binding := readmeRBAC(t)
	ns := fmt.Sprintf("mh-rbac-%d", time.Now().UnixNano()%1_000_000_000)
	ctx := t.Context()
	nsObj := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := c.client.Resource(namespacesGVR).Create(ctx, toUnstructured(t, nsObj), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.client.Resource(namespacesGVR).Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	})
	role.Namespace, binding.Namespace = ns, ns
	for i := range binding.Subjects {
		binding.Subjects[i].Namespace = ns
	}
	sa := binding.Subjects[0].Name
	saObj := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: sa}}
	if _, err := c.client.Resource(serviceAccountsGVR).Namespace(ns).Create(ctx, toUnstructured(t, saObj), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The README's objects carry their own apiVersion and kind (readmeRBAC checks the kinds).
	if _, err := c.client.Resource(rolesGVR).Namespace(ns).Create(ctx, toUnstructured(t, role), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.Resource(roleBindingsGVR).Namespace(ns).Create(ctx, toUnstructured(t, binding), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods are refused in a namespace until its default service account exists.
	for deadline := time.Now().Add(e2eWait); ; {
		if _, err := c.client.Resource(serviceAccountsGVR).Namespace(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s got no default service account", ns)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	hour := int64(3600)
	// The service account's "token" subresource; the request names the account.
	tokReq := &authenticationv1.TokenRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
		Spec:       authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour},
	}
	tokObj, err := c.client.Resource(serviceAccountsGVR).Namespace(ns).Create(ctx, toUnstructured(t, tokReq), metav1.CreateOptions{}, "token")
	if err != nil {
		t.Fatal(err)
	}
	var tok authenticationv1.TokenRequest
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tokObj.Object, &tok); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: sa, user: {token: %q}}]
contexts: [{name: x, context: {cluster: c, user: sa, namespace: %s}}]
current-context: x
`, os.Getenv("TESTCLUSTER_APISERVER"), os.Getenv("TESTCLUSTER_CA"), tok.Status.Token, ns)), 0o600); err != nil {
		t.Fatal(err)
	}

	ws := kubeWorkspace(t)
	// No --kube-namespace: the context's namespace is taken.
	s := startServer(t, ws, "--kube-config", kubeconfig, "--kube-image", "ignored-by-proclet:1", "--lease", "3s")
	s.initialize()
	res := s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "read", "command": "cat data/input.txt"},
		map[string]any{"id": "long", "command": "echo started; sleep 600"},
	}})
	if res["isError"] == true {
		t.Fatalf("tasks_run with the README's Role: %s", resultText(res))
	}
	graphID := structuredOf(t, res)["graphId"].(string)
	waitLog(t, s, graphID, "long", "started\n")
	s.toolCall("tasks_cancel", map[string]any{"graphId": graphID, "taskIds": []string{"long"}})
	ts := tasksOf(s.waitGraph(graphID))
	if ts["read"]["status"] != "succeeded" || ts["long"]["status"] != "cancelled" {
		t.Fatalf("with the README's Role: read %v (%v: %v), long %v (%v: %v); want succeeded, cancelled",
			ts["read"]["status"], ts["read"]["errorCode"], ts["read"]["message"], ts["long"]["status"], ts["long"]["errorCode"], ts["long"]["message"])
	}
	if got := logText(s.taskStatus(graphID, "read")); got != "alpha\nbeta\ngamma\n" {
		t.Errorf("read's log = %q", got)
	}
	pods, err := c.client.Resource(podsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.GetName(), "mh-long-") {
			t.Errorf("the cancelled task's pod %s is still there", p.GetName())
		}
	}
	// A few sweeps (every lease/3) ran meanwhile; none may have been refused.
	if strings.Contains(s.stderr.String(), "forbidden") {
		t.Errorf("the server was refused something with the README's Role:\n%s", s.stderr)
	}
}

// readmeRBAC is the Role and RoleBinding of the README's "RBAC the server needs".
func readmeRBAC(t *testing.T) (*rbacv1.Role, *rbacv1.RoleBinding) {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(b, []byte("### RBAC the server needs"))
	if !ok {
		t.Fatal("README.md has no section \"RBAC the server needs\"")
	}
	_, after, ok = bytes.Cut(after, []byte("```yaml\n"))
	block, _, ok2 := bytes.Cut(after, []byte("```"))
	if !ok || !ok2 {
		t.Fatal("the README's RBAC section has no yaml block")
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(block), 4096)
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	if err := dec.Decode(&role); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&binding); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if role.Kind != "Role" || binding.Kind != "RoleBinding" || len(binding.Subjects) == 0 || binding.Subjects[0].Kind != "ServiceAccount" {
		t.Fatalf("the README's RBAC block is not a Role and a RoleBinding to a ServiceAccount: %+v %+v", role.TypeMeta, binding)
	}
	return &role, &binding
}

// The remote helper killed while pods run: the server starts another, which takes each
// attempt over when it is next asked about it (its Job is not created twice), and every
// task ends as it ran, its log whole: one that ended before the kill, two that run through
// it, one that fails.
func TestKube_HelperKilledWhilePodsRun(t *testing.T) {
	c := needCluster(t)
	s := kubeServer(t, c, kubeWorkspace(t))
	// Each runs until the test has killed the helper (the file gate in its pod's own
	// directory never appears: it stops after about 3 s), then says so.
	wait := "while [ ! -e gate ] && [ $((i+=1)) -le 30 ]; do sleep 0.1; done; "
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "early", "command": "echo early"},
		map[string]any{"id": "ok", "command": "echo before; " + wait + "echo after"},
		map[string]any{"id": "also", "command": "echo before; " + wait + "echo after"},
		map[string]any{"id": "fails", "command": "echo before; " + wait + "echo after; exit 4"},
	}}))["graphId"].(string)
	for _, id := range []string{"ok", "also", "fails"} {
		waitLog(t, s, graphID, id, "before\n")
	}
	waitLog(t, s, graphID, "early", "early\n")
	pids := helperChildren(t, s.cmd.Process.Pid)
	if len(pids) != 1 {
		t.Fatalf("helpers %v, want one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ts := tasksOf(s.waitGraph(graphID))
	for id, want := range map[string]string{"early": "early\n", "ok": "before\nafter\n", "also": "before\nafter\n", "fails": "before\nafter\n"} {
		if got := logText(s.taskStatus(graphID, id)); got != want {
			t.Errorf("%s's log = %q, want %q: each line once", id, got, want)
		}
	}
	for _, id := range []string{"early", "ok", "also"} {
		if ts[id]["status"] != "succeeded" {
			t.Errorf("%s = %v %v (%v), want succeeded", id, ts[id]["status"], ts[id]["errorCode"], ts[id]["message"])
		}
	}
	if f := ts["fails"]; f["status"] != "failed" || f["errorCode"] != "EXIT_NONZERO" || f["exitCode"] != float64(4) {
		t.Errorf("fails = %v %v exit %v (%v), want failed EXIT_NONZERO 4: the pod's own end", f["status"], f["errorCode"], f["exitCode"], f["message"])
	}
	if jobs, _ := c.graphObjects(t, graphID); len(jobs) > 4 {
		t.Errorf("the graph has Jobs %v: an attempt was started again, not taken over", jobs)
	}
	helperReplaced(t, s, pids[0])
}

// A node that goes away while its pod runs: NODE_LOST once the cluster marks it
// NotReady, never a hang. It stops a node of the cluster for good, so it runs last.
func TestKube_zNodeLost(t *testing.T) {
	c := needCluster(t)
	if len(c.nodes) < 2 {
		t.Skip("stopping the only node would leave no cluster; start one with TESTCLUSTER_NODES=3")
	}
	s := kubeServer(t, c, kubeWorkspace(t))
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{
		map[string]any{"id": "stranded", "command": "echo running; sleep 600"},
	}}))["graphId"].(string)
	waitLog(t, s, graphID, "stranded", "running\n")
	node, _ := s.taskStatus(graphID, "stranded")["node"].(string)
	pid := nodePid(t, c, node)
	t.Logf("stopping node %s (pid %d)", node, pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var st map[string]any
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		st = structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "waitMs": 20000}))
		if st["status"] != "running" {
			break
		}
	}
	tk := tasksOf(st)["stranded"]
	if tk["status"] != "failed" || tk["errorCode"] != "NODE_LOST" {
		t.Fatalf("stranded = %v/%v %v, want failed/NODE_LOST", tk["status"], tk["errorCode"], tk["message"])
	}
	t.Logf("NODE_LOST %s after the node stopped: %v", time.Since(began).Round(time.Second), tk["message"])
	// What proclet left running of the pod (it leaves its processes when it stops) is the
	// cluster's down.sh to stop, by its pod directory.
}

// nodePid is the pid of a proclet node, from the run directory's pids file.
func nodePid(t *testing.T, c cluster, node string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.run, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == node {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("node %s is not in %s/pids", node, c.run)
	return 0
}
