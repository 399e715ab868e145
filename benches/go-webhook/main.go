// Command go-webhook is the Go baseline of `make bench` (issue 16): a plain standard-library
// admission webhook doing a simplified SidecarSet injection, to compare kruise against what a
// Go webhook costs on the same machine.
//
// POST /mutate-pod decodes the AdmissionReview and its Pod with encoding/json into the
// k8s.io/api types (as a controller-runtime webhook does), adds the sample sidecar container
// (examples/sidecarset.yaml: the app containers' mounts shared, LOG_LEVEL transferred,
// IS_INJECTED=true), a volume and an annotation, and answers a 3-operation JSON patch. TLS
// 1.2/1.3 from crypto/tls, HTTP/1.1 only (the apiserver speaks HTTP/1.1 to webhooks), keep-alive,
// a header-read timeout and the 7 MiB body limit of controller-runtime.
//
//	go-webhook -addr 127.0.0.1:9443 -cert-dir DIR   (DIR holds tls.crt and tls.key)
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const maxBody = 7 << 20

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// sidecar builds the injected container from the pod's app containers.
func sidecar(pod *corev1.Pod) corev1.Container {
	c := corev1.Container{
		Name:    "log-agent",
		Image:   "busybox:1.36",
		Command: []string{"sh", "-c", "tail -F /var/log/app/access.log"},
		Env:     []corev1.EnvVar{{Name: "IS_INJECTED", Value: "true"}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("16Mi"),
		}},
		VolumeMounts: []corev1.VolumeMount{{Name: "sidecar-shared", MountPath: "/var/run/sidecar"}},
	}
	for _, app := range pod.Spec.Containers {
		c.VolumeMounts = append(c.VolumeMounts, app.VolumeMounts...)
		if app.Name == "web" {
			for _, e := range app.Env {
				if e.Name == "LOG_LEVEL" {
					c.Env = append(c.Env, e)
				}
			}
		}
	}
	return c
}

// inject returns the patch: the sidecar first, a volume, an annotation.
func inject(pod *corev1.Pod) []patchOp {
	ops := []patchOp{{Op: "add", Path: "/spec/containers/0", Value: sidecar(pod)}}
	volume := corev1.Volume{Name: "sidecar-shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	if len(pod.Spec.Volumes) == 0 {
		ops = append(ops, patchOp{Op: "add", Path: "/spec/volumes", Value: []corev1.Volume{volume}})
	} else {
		ops = append(ops, patchOp{Op: "add", Path: "/spec/volumes/-", Value: volume})
	}
	const key, value = "kruise.io/sidecarset-injected-list", "sample"
	if len(pod.Annotations) == 0 {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{key: value}})
	} else {
		escaped := strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escaped, Value: value})
	}
	return ops
}

func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Code: int32(code),
	})
}

func mutatePod(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.EqualFold(strings.TrimSpace(strings.Split(ct, ";")[0]), "application/json") {
		fail(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		fail(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		fail(w, http.StatusBadRequest, "request body is not an AdmissionReview")
		return
	}
	response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Result: &metav1.Status{Code: 200}}
	var pod corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		response.Allowed = false
		response.Result = &metav1.Status{Code: 400, Message: "cannot decode Pod: " + err.Error()}
	} else if patch, err := json.Marshal(inject(&pod)); err != nil {
		response.Allowed = false
		response.Result = &metav1.Status{Code: 500, Message: err.Error()}
	} else {
		patchType := admissionv1.PatchTypeJSONPatch
		response.Patch, response.PatchType = patch, &patchType
	}
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: response}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9443", "listen address")
	certDir := flag.String("cert-dir", "certs", "directory holding tls.crt and tls.key")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /mutate-pod", mutatePod)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	server := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		// HTTP/1.1 only, as the kubebuilder scaffold configures webhooks.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	log.Printf("go-webhook serving on %s", *addr)
	log.Fatal(server.ListenAndServeTLS(filepath.Join(*certDir, "tls.crt"), filepath.Join(*certDir, "tls.key")))
}
