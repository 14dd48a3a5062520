package kube

// The executor's calls to the API server, on client-go's REST client with a scheme of the
// two API groups it uses (core/v1 and batch/v1). Why not the generated clientset
// (k8s.io/client-go/kubernetes) and its informer factory: they link every API group's
// types, typed clients, apply configurations, listers and informers, about 500 packages
// that every server, every vet of every release target and every test build compiled, for
// a dozen calls on Jobs and pods. Without them the server's dependencies went from 937
// packages to 564, its binary from 107 to 55 MB, and a fresh server's first answer from
// 40 to 31 ms (median of 9 starts each).

import (
	"context"
	"io"
	"net/http"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// kubeScheme knows the objects the executor sends and reads, and the options of its calls.
var (
	kubeScheme     = runtime.NewScheme()
	kubeCodecs     = serializer.NewCodecFactory(kubeScheme)
	parameterCodec = runtime.NewParameterCodec(kubeScheme)
)

func init() {
	utilruntime.Must(corev1.AddToScheme(kubeScheme))
	utilruntime.Must(batchv1.AddToScheme(kubeScheme))
	// The options and status objects of the unversioned meta group, as client-go's own
	// scheme registers them.
	metav1.AddToGroupVersion(kubeScheme, schema.GroupVersion{Version: "v1"})
}

// client is a namespace's Jobs and pods. The informers (run.go) list and watch through
// core and batch with client-go's own list-watch.
type client struct {
	core, batch rest.Interface
	ns          string
}

// newClient makes the REST clients of both groups on one HTTP client, so that they share
// connections, as the clientset does.
func newClient(cfg *rest.Config, ns string) (*client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	core, err := restClient(cfg, hc, corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := restClient(cfg, hc, batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &client{core: core, batch: batch, ns: ns}, nil
}

func restClient(cfg *rest.Config, hc *http.Client, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = kubeCodecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(c, hc)
}

func (c *client) createJob(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	out := &batchv1.Job{}
	err := c.batch.Post().Namespace(c.ns).Resource("jobs").
		VersionedParams(&metav1.CreateOptions{}, parameterCodec).Body(job).Do(ctx).Into(out)
	return out, err
}

func (c *client) getJob(ctx context.Context, name string) (*batchv1.Job, error) {
	out := &batchv1.Job{}
	err := c.batch.Get().Namespace(c.ns).Resource("jobs").Name(name).
		VersionedParams(&metav1.GetOptions{}, parameterCodec).Do(ctx).Into(out)
	return out, err
}

func (c *client) listJobs(ctx context.Context, opts metav1.ListOptions) (*batchv1.JobList, error) {
	out := &batchv1.JobList{}
	err := c.batch.Get().Namespace(c.ns).Resource("jobs").
		VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

func (c *client) deleteJob(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.batch.Delete().Namespace(c.ns).Resource("jobs").Name(name).Body(&opts).Do(ctx).Error()
}

func (c *client) listPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := c.core.Get().Namespace(c.ns).Resource("pods").
		VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

func (c *client) deletePods(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	return c.core.Delete().Namespace(c.ns).Resource("pods").
		VersionedParams(&list, parameterCodec).Body(&opts).Do(ctx).Error()
}

// podLogs streams a container's log.
func (c *client) podLogs(ctx context.Context, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.core.Get().Namespace(c.ns).Resource("pods").Name(pod).SubResource("log").
		VersionedParams(opts, parameterCodec).Stream(ctx)
}

// execRequest is the pods/exec request of a command in a pod.
func (c *client) execRequest(pod string, opts *corev1.PodExecOptions) *rest.Request {
	return c.core.Post().Namespace(c.ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(opts, parameterCodec)
}
