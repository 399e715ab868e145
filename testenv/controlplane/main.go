// kruise-controlplane: a real Kubernetes control plane for kruise's tests, in one Go program.
//
// Without a subcommand it is the supervisor: it writes a PKI and an admin kubeconfig into --dir,
// runs embedded etcd in its own process, and starts kube-apiserver, kube-controller-manager and
// kube-scheduler as child processes of this same binary (each one the component's own cobra
// command, so flags and code paths are the production ones; separate processes keep the
// components' process-global state — feature gates, klog, signal handlers — apart). When every
// component is ready it prints one JSON line on stdout:
//
//	{"kubeconfig": ".../kubeconfig", "server": "https://127.0.0.1:PORT", "dir": "...", "logs": "..."}
//
// It stops on SIGTERM/SIGINT, on end of stdin with --exit-on-stdin-eof (how a test process that
// dies without cleaning up still takes its control plane with it), or when a component dies; then
// it stops the children, etcd, and removes --dir unless --keep.
//
// Webhooks referenced by Service: the apiserver resolves them through the real EndpointSlice
// resolver (the one --enable-aggregator-routing selects), so Service, port names and endpoint
// readiness are production's. The API server refuses loopback endpoint addresses, so tests publish
// endpoints in the virtual range 198.18.0.0/16 and the resolver dials 198.18.X.Y as 127.18.X.Y
// (Linux routes all of 127.0.0.0/8 to lo): a `kruise serve` bound to 127.18.X.Y:9876 is reached as
// pod 198.18.X.Y:9876 would be, with TLS server name <service>.<namespace>.svc.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "apiserver":
			os.Exit(runAPIServer(os.Args[2:]))
		case "controller-manager":
			os.Exit(runControllerManager(os.Args[2:]))
		case "scheduler":
			os.Exit(runScheduler(os.Args[2:]))
		}
	}
	if err := supervise(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "kruise-controlplane: %v\n", err)
		os.Exit(1)
	}
}
