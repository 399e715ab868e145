// The supervisor: PKI, etcd, the three components, readiness, the ready line, and shutdown.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

type options struct {
	dir            string
	keep           bool
	exitOnStdinEOF bool
	startTimeout   time.Duration
	apiserverFlags multiFlag
	kcmFlags       multiFlag
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type readyLine struct {
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server"`
	Dir        string `json:"dir"`
	Logs       string `json:"logs"`
	CA         string `json:"ca"`
	Token      string `json:"token"`
	StartedIn  string `json:"startedIn"`
}

func supervise(args []string) error {
	var o options
	fs := flag.NewFlagSet("kruise-controlplane", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "directory for etcd data, certificates, kubeconfig and logs (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep --dir on exit")
	fs.BoolVar(&o.exitOnStdinEOF, "exit-on-stdin-eof", false, "shut down when stdin reaches end of file (the parent process is gone)")
	fs.DurationVar(&o.startTimeout, "start-timeout", 2*time.Minute, "how long every component may take to become ready")
	fs.Var(&o.apiserverFlags, "apiserver-flag", "an extra kube-apiserver flag (repeatable), e.g. --apiserver-flag=--v=2")
	fs.Var(&o.kcmFlags, "controller-manager-flag", "an extra kube-controller-manager flag (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	started := time.Now()
	if o.dir == "" {
		d, err := os.MkdirTemp("", "kruise-controlplane-")
		if err != nil {
			return err
		}
		o.dir = d
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.exitOnStdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}

	p, err := writePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	etcd, etcdURL, err := startEtcd(filepath.Join(dir, "etcd"), filepath.Join(logs, "etcd.log"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, p); err != nil {
		return err
	}

	sup := &children{exited: make(chan error, 4)}
	defer sup.stopAll()

	apiArgs := append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--enable-aggregator-routing=true",
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--token-auth-file=" + p.TokenFile,
		"--requestheader-client-ca-file=" + p.CACert,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.FrontProxyCert,
		"--proxy-client-key-file=" + p.FrontProxyKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--profiling=false",
		"--event-ttl=1h",
	}, o.apiserverFlags...)
	err = sup.start(self, "apiserver", apiArgs, filepath.Join(logs, "kube-apiserver.log"), []string{
		envSelfServer + "=" + server, envSelfToken + "=" + p.AdminToken, envSelfCA + "=" + p.CACert,
	})
	if err != nil {
		return err
	}
	client := adminClient(p)
	deadline := time.Now().Add(o.startTimeout)
	if err := waitFor(ctx, sup, deadline, "kube-apiserver /readyz", func() error {
		return getOK(client, p.AdminToken, server+"/readyz")
	}); err != nil {
		return err
	}

	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	kcmArgs := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", kcmPort),
		"--cert-dir=" + filepath.Join(dir, "kcm-certs"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p.SAKey,
		"--root-ca-file=" + p.CACert,
		"--controllers=" + strings.Join([]string{
			"garbage-collector-controller",
			"namespace-controller",
			"serviceaccount-controller",
			"serviceaccount-token-controller",
			"root-ca-certificate-publisher-controller",
			"clusterrole-aggregation-controller",
			"node-lifecycle-controller",
			"persistentvolume-binder-controller",
			"persistentvolumeclaim-protection-controller",
			"persistentvolume-protection-controller",
			// The Jobs AdvancedCronJobs create; Deployments for later workloads.
			"job-controller",
			"deployment-controller",
			"replicaset-controller",
			// apps/v1 StatefulSets (UnitedDeployment subsets).
			"statefulset-controller",
		}, ","),
		"--node-monitor-grace-period=40s",
		"--profiling=false",
	}, o.kcmFlags...)
	if err := sup.start(self, "controller-manager", kcmArgs, filepath.Join(logs, "kube-controller-manager.log"), nil); err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	schedArgs := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", schedPort),
		"--cert-dir=" + filepath.Join(dir, "scheduler-certs"),
		"--leader-elect=false",
		"--profiling=false",
	}
	if err := sup.start(self, "scheduler", schedArgs, filepath.Join(logs, "kube-scheduler.log"), nil); err != nil {
		return err
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a component's self-signed port on loopback
	}}
	if err := waitFor(ctx, sup, deadline, "kube-controller-manager /healthz", func() error {
		return getOK(insecure, "", fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort))
	}); err != nil {
		return err
	}
	if err := waitFor(ctx, sup, deadline, "kube-scheduler /readyz", func() error {
		return getOK(insecure, "", fmt.Sprintf("https://127.0.0.1:%d/readyz", schedPort))
	}); err != nil {
		return err
	}
	// The serviceaccount controller has run once the default namespace has its ServiceAccount:
	// pods can be created from then on.
	if err := waitFor(ctx, sup, deadline, "ServiceAccount default/default", func() error {
		return getOK(client, p.AdminToken, server+"/api/v1/namespaces/default/serviceaccounts/default")
	}); err != nil {
		return err
	}

	line, err := json.Marshal(readyLine{
		Kubeconfig: kubeconfig, Server: server, Dir: dir, Logs: logs, CA: p.CACert, Token: p.AdminToken,
		StartedIn: time.Since(started).Round(time.Millisecond).String(),
	})
	if err != nil {
		return err
	}
	fmt.Println(string(line))

	select {
	case <-ctx.Done():
		return nil
	case err := <-sup.exited:
		return err
	case err := <-etcd.Err():
		return fmt.Errorf("etcd: %w", err)
	}
}

func startEtcd(dataDir, logFile string) (*embed.Etcd, string, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kruise-testenv"
	cfg.Dir = dataDir
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logFile}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		return nil, "", errors.New("etcd did not become ready within 60s")
	}
	return e, clientURL.String(), nil
}

type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

type children struct {
	list     []*child
	exited   chan error
	stopping atomic.Bool
}

func (s *children) start(self, name string, args []string, logPath string, env []string) error {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, append([]string{name}, args...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	// A supervisor killed without a chance to clean up still takes its components with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	s.list = append(s.list, c)
	go func() {
		err := cmd.Wait()
		logFile.Close()
		close(c.done)
		if !s.stopping.Load() {
			s.exited <- fmt.Errorf("%s exited: %v; last lines of %s:\n%s", name, err, logPath, tail(logPath, 30))
		}
	}()
	return nil
}

// stopAll stops the components in reverse start order: SIGTERM, then SIGKILL after 10 s.
func (s *children) stopAll() {
	s.stopping.Store(true)
	for i := len(s.list) - 1; i >= 0; i-- {
		c := s.list[i]
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
}

func waitFor(ctx context.Context, sup *children, deadline time.Time, what string, check func() error) error {
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready in time: %v", what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s", what)
		case err := <-sup.exited:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func adminClient(p *pki) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func getOK(c *http.Client, token, u string) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func writeKubeconfig(path, server string, p *pki) error {
	ca := base64.StdEncoding.EncodeToString(p.caPEM)
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kruise-testenv
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: kruise-testenv-admin
  user:
    token: %s
contexts:
- name: kruise-testenv
  context:
    cluster: kruise-testenv
    user: kruise-testenv-admin
    namespace: default
current-context: kruise-testenv
`, server, ca, p.AdminToken)
	return os.WriteFile(path, []byte(text), 0o600)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
