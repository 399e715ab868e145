// The apiserver's service resolver for tests: production's EndpointSlice resolver, with endpoint
// addresses of the virtual range 198.18.0.0/16 dialled at 127.18.X.Y (see main.go).
package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	aggregator "k8s.io/kube-aggregator/pkg/apiserver"
)

// The environment the supervisor gives the apiserver child, so its resolver can watch the
// apiserver it runs in.
const (
	envSelfServer = "KRUISE_CONTROLPLANE_SELF_SERVER"
	envSelfToken  = "KRUISE_CONTROLPLANE_SELF_TOKEN"
	envSelfCA     = "KRUISE_CONTROLPLANE_SELF_CA"
)

var virtualEndpoints = net.IPNet{IP: net.IPv4(198, 18, 0, 0).To4(), Mask: net.CIDRMask(16, 32)}

// loopbackIP maps a virtual endpoint address to the loopback address a test binds; other
// addresses are returned unchanged.
func loopbackIP(ip net.IP) net.IP {
	v4 := ip.To4()
	if v4 == nil || !virtualEndpoints.Contains(v4) {
		return ip
	}
	return net.IPv4(127, 18, v4[2], v4[3])
}

type loopbackEndpointResolver struct {
	config *rest.Config

	once     sync.Once
	synced   chan struct{}
	delegate aggregator.ServiceResolver
	err      error
}

// newLoopbackEndpointResolver reads the apiserver's own address and credentials from the
// environment; without them (an apiserver started by hand) every webhook resolution fails.
func newLoopbackEndpointResolver() *loopbackEndpointResolver {
	server, token, ca := os.Getenv(envSelfServer), os.Getenv(envSelfToken), os.Getenv(envSelfCA)
	if server == "" || token == "" || ca == "" {
		err := fmt.Errorf("service resolver: %s, %s and %s are not set", envSelfServer, envSelfToken, envSelfCA)
		synced := make(chan struct{})
		close(synced)
		r := &loopbackEndpointResolver{synced: synced, err: err}
		r.once.Do(func() {})
		return r
	}
	cfg := &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: ca},
		UserAgent:       "kruise-controlplane-service-resolver",
		QPS:             100,
		Burst:           200,
	}
	return &loopbackEndpointResolver{config: cfg, synced: make(chan struct{})}
}

// start runs the Service and EndpointSlice informers once the first webhook call needs them (by
// then the apiserver serves); it never returns before the caches synced or failed to.
func (r *loopbackEndpointResolver) start() {
	r.once.Do(func() {
		defer close(r.synced)
		client, err := kubernetes.NewForConfig(r.config)
		if err != nil {
			r.err = err
			return
		}
		factory := informers.NewSharedInformerFactory(client, 0)
		services := factory.Core().V1().Services()
		slices := factory.Discovery().V1().EndpointSlices()
		getter, err := proxy.NewEndpointSliceIndexerGetter(slices)
		if err != nil {
			r.err = err
			return
		}
		// Informers must exist before Start, or they never run.
		servicesSynced := services.Informer().HasSynced
		slicesSynced := slices.Informer().HasSynced
		lister := services.Lister()
		factory.Start(context.Background().Done())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), servicesSynced, slicesSynced) {
			r.err = fmt.Errorf("service resolver caches did not sync")
			return
		}
		r.delegate = aggregator.NewEndpointServiceResolver(lister, getter)
	})
	<-r.synced
}

func (r *loopbackEndpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	r.start()
	if r.err != nil {
		klog.Errorf("test service resolver: %v", r.err)
		return nil, r.err
	}
	u, err := r.delegate.ResolveEndpoint(namespace, name, port)
	if err != nil {
		klog.Infof("test service resolver: %s/%s:%d: %v", namespace, name, port, err)
		return nil, err
	}
	defer func() { klog.V(2).Infof("test service resolver: %s/%s:%d -> %s", namespace, name, port, u.Host) }()
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		return u, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		u.Host = net.JoinHostPort(loopbackIP(ip).String(), p)
	}
	return u, nil
}
