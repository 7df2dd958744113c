// Command go-seed is the Go peer of bench/peers.py: the reconcile algorithm of the seed
// operator (shared/seeds/001: an `old/spec` annotation holding the last applied spec,
// create-or-update of a Deployment and a NodePort Service, controller-runtime v0.16.3
// with its defaults: one worker, client-side rate limit QPS 20 / burst 30, a cache-backed
// client) re-written against appstack's `appstack.dev/v1` AppService, so every peer of the
// benchmark reconciles the very same objects. Like the seed it never writes status.
//
// The only departures from the seed: the group is appstack.dev (not kosmos.io), the
// metrics address is a flag (the default :8080 would collide on a shared machine) and
// the owner reference's GVK is a constant (the seed reads it from the object's TypeMeta).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

const oldSpecAnnotation = "old/spec"

var (
	groupVersion  = schema.GroupVersion{Group: "appstack.dev", Version: "v1"}
	schemeBuilder = &scheme.Builder{GroupVersion: groupVersion}
	appServiceGVK = groupVersion.WithKind("AppService")
)

// AppServiceSpec holds the seed's three fields; appstack's CRD accepts them unchanged.
type AppServiceSpec struct {
	Size  *int32               `json:"size"`
	Image string               `json:"image"`
	Ports []corev1.ServicePort `json:"ports,omitempty"`
}

// AppService is the custom resource (no status: the seed never writes one).
type AppService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppServiceSpec `json:"spec"`
}

// AppServiceList is a list of AppService.
type AppServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppService `json:"items"`
}

func (in *AppServiceSpec) deepCopy() AppServiceSpec {
	out := AppServiceSpec{Image: in.Image}
	if in.Size != nil {
		size := *in.Size
		out.Size = &size
	}
	if in.Ports != nil {
		out.Ports = make([]corev1.ServicePort, len(in.Ports))
		for i := range in.Ports {
			in.Ports[i].DeepCopyInto(&out.Ports[i])
		}
	}
	return out
}

// DeepCopyObject is what deepcopy-gen writes for the seed.
func (in *AppService) DeepCopyObject() runtime.Object {
	out := &AppService{TypeMeta: in.TypeMeta, Spec: in.Spec.deepCopy()}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject is what deepcopy-gen writes for the seed.
func (in *AppServiceList) DeepCopyObject() runtime.Object {
	out := &AppServiceList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range in.Items {
		out.Items = append(out.Items, *in.Items[i].DeepCopyObject().(*AppService))
	}
	return out
}

func ownerRefs(app *AppService) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(app, appServiceGVK)}
}

func newDeploy(app *AppService) *appsv1.Deployment {
	labels := map[string]string{"app": app.Name}
	var ports []corev1.ContainerPort
	for _, p := range app.Spec.Ports {
		ports = append(ports, corev1.ContainerPort{ContainerPort: p.TargetPort.IntVal})
	}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: app.Name, Namespace: app.Namespace, OwnerReferences: ownerRefs(app),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: app.Spec.Size,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: app.Name, Image: app.Spec.Image, Ports: ports,
					ImagePullPolicy: corev1.PullIfNotPresent,
				}}},
			},
		},
	}
}

func newService(app *AppService) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: app.Name, Namespace: app.Namespace, OwnerReferences: ownerRefs(app),
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Ports:    app.Spec.Ports,
			Selector: map[string]string{"app": app.Name},
		},
	}
}

// reconciler is the seed's AppServiceReconciler, step for step.
type reconciler struct {
	client.Client
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app AppService
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	deploy := &appsv1.Deployment{}
	if err := r.Get(ctx, req.NamespacedName, deploy); err != nil && errors.IsNotFound(err) {
		data, _ := json.Marshal(app.Spec)
		if app.Annotations == nil {
			app.Annotations = map[string]string{}
		}
		app.Annotations[oldSpecAnnotation] = string(data)
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return r.Update(ctx, &app)
		}); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, newDeploy(&app)); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, newService(&app)); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, nil
	}
	oldSpec := AppServiceSpec{}
	if err := json.Unmarshal([]byte(app.Annotations[oldSpecAnnotation]), &oldSpec); err != nil {
		return ctrl.Result{}, err
	}
	if reflect.DeepEqual(app.Spec, oldSpec) {
		return ctrl.Result{}, nil
	}
	oldDeploy := &appsv1.Deployment{}
	if err := r.Get(ctx, req.NamespacedName, oldDeploy); err != nil {
		return ctrl.Result{}, err
	}
	oldDeploy.Spec = newDeploy(&app).Spec
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return r.Update(ctx, oldDeploy)
	}); err != nil {
		return ctrl.Result{}, err
	}
	svc := newService(&app)
	oldService := &corev1.Service{}
	if err := r.Get(ctx, req.NamespacedName, oldService); err != nil {
		return ctrl.Result{}, err
	}
	svc.Spec.ClusterIP = oldService.Spec.ClusterIP
	oldService.Spec = svc.Spec
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return r.Update(ctx, oldService)
	}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

func main() {
	metricsAddr := flag.String("metrics-bind-address", "0", "where /metrics is served (0: off)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse() // also --kubeconfig, registered by controller-runtime
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	schemeBuilder.Register(&AppService{}, &AppServiceList{})
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: *metricsAddr},
	})
	if err != nil {
		log.Error(err, "unable to start manager")
		os.Exit(1)
	}
	if err := schemeBuilder.AddToScheme(mgr.GetScheme()); err != nil {
		log.Error(err, "unable to add scheme")
		os.Exit(1)
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&AppService{}).Complete(&reconciler{mgr.GetClient()})
	if err != nil {
		log.Error(err, "unable to create controller")
		os.Exit(1)
	}
	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "problem running manager")
		os.Exit(1)
	}
}
