package rbactest

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// serviceAccountDir is where the kubelet mounts a Pod's ServiceAccount token and the cluster's
// CA; a shipped kubeconfig names files there, and Apply puts the test's versions in their place.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// NewToken mints another token of the ServiceAccount (TokenRequest): the same user as Token,
// without the decisions servers cached for Token.
func (in *Install) NewToken() string {
	in.t.Helper()
	tok, err := in.client.CoreV1().ServiceAccounts(in.Namespace).CreateToken(in.env.Context(), in.m.ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		in.t.Fatalf("rbactest: TokenRequest for %s: %v", in.m.ServiceAccount, err)
	}
	return tok.Status.Token
}

// writeTokenKubeconfig writes a kubeconfig that reaches the test's server with a token of the
// ServiceAccount and the cluster's CA, and nothing else: for manifests without a Deployment.
func (in *Install) writeTokenKubeconfig() {
	in.t.Helper()
	admin := in.env.Config()
	in.Token = in.NewToken()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos[in.m.ServiceAccount] = &clientcmdapi.AuthInfo{Token: in.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: in.m.ServiceAccount, Namespace: in.Namespace}
	cfg.CurrentContext = "test"
	in.Kubeconfig = filepath.Join(in.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, in.Kubeconfig); err != nil {
		in.t.Fatal(err)
	}
}

// writeKubeconfig finds the kubeconfig the Deployment mounts (a ConfigMap key behind its
// --kubeconfig argument), checks that its only credentials are the ServiceAccount's token
// file, and writes it for the test: the server's address, and the token and CA in files that
// stand in for the kubelet's mount. It fills in Kubeconfig and Args.
func (in *Install) writeKubeconfig() {
	in.t.Helper()
	c := in.m.Deployment.Spec.Template.Spec.Containers[0]
	args, err := expand(c, in.Namespace)
	if err != nil {
		in.t.Fatalf("rbactest: container %q: %v", c.Name, err)
	}
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--kubeconfig=") })
	if i < 0 {
		in.t.Fatalf("rbactest: container %q has no --kubeconfig=PATH argument: without one the binary runs its in-memory demo", c.Name)
	}
	shipped, err := in.mounted(c, strings.TrimPrefix(args[i], "--kubeconfig="))
	if err != nil {
		in.t.Fatalf("rbactest: container %q: %v", c.Name, err)
	}
	cfg, err := clientcmd.Load([]byte(shipped))
	if err != nil {
		in.t.Fatalf("rbactest: the shipped kubeconfig: %v", err)
	}
	dir := in.t.TempDir()
	admin := in.env.Config()
	in.Token = in.NewToken()
	files := map[string][]byte{"token": []byte(in.Token), "ca.crt": admin.CAData}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			in.t.Fatal(err)
		}
	}
	local := func(p string) string {
		if name, ok := strings.CutPrefix(p, serviceAccountDir+"/"); ok && files[name] != nil {
			return filepath.Join(dir, name)
		}
		in.t.Fatalf("rbactest: the shipped kubeconfig names %q; only the ServiceAccount's token and CA (under %s) are expected", p, serviceAccountDir)
		return ""
	}
	for name, cl := range cfg.Clusters {
		if cl.InsecureSkipTLSVerify || cl.CertificateAuthority == "" {
			in.t.Fatalf("rbactest: the shipped kubeconfig's cluster %q must verify the server with the ServiceAccount's CA", name)
		}
		cl.Server, cl.CertificateAuthority = admin.Host, local(cl.CertificateAuthority)
	}
	for name, u := range cfg.AuthInfos {
		if u.TokenFile == "" || u.Token != "" || u.ClientCertificate != "" || len(u.ClientCertificateData) > 0 || u.ClientKey != "" ||
			len(u.ClientKeyData) > 0 || u.Username != "" || u.Exec != nil || u.AuthProvider != nil || u.Impersonate != "" {
			in.t.Fatalf("rbactest: the shipped kubeconfig's user %q must hold the ServiceAccount's token file and nothing else", name)
		}
		u.TokenFile = local(u.TokenFile)
	}
	in.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, in.Kubeconfig); err != nil {
		in.t.Fatal(err)
	}
	args[i] = "--kubeconfig=" + in.Kubeconfig
	healthPort := ""
	for j, a := range args {
		for _, flag := range []string{"--metrics-addr=", "--health-addr="} {
			if addr, ok := strings.CutPrefix(a, flag); ok {
				if flag == "--health-addr=" {
					_, healthPort, _ = strings.Cut(addr, ":")
				}
				args[j] = flag + "127.0.0.1:0"
			}
		}
	}
	in.Args = args
	in.probes = probePaths(in.t, c, healthPort)
}

// mounted returns the content of the file at p in container c: a key of a ConfigMap of the
// manifests, mounted as a volume.
func (in *Install) mounted(c corev1.Container, p string) (string, error) {
	for _, vm := range c.VolumeMounts {
		key, ok := strings.CutPrefix(p, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range in.m.Deployment.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			for _, u := range in.m.Objects {
				if u.GetKind() == "ConfigMap" && u.GetName() == v.ConfigMap.Name {
					if data, ok, _ := unstructured.NestedString(u.Object, "data", path.Clean(key)); ok {
						return data, nil
					}
				}
			}
			return "", fmt.Errorf("%s is in volume %q, but ConfigMap %q of the manifests has no key %q", p, v.Name, v.ConfigMap.Name, key)
		}
	}
	return "", fmt.Errorf("%s is not in a ConfigMap volume the container mounts", p)
}

// varRef is a $(VAR) reference in a container's arguments.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand returns c's arguments with $(VAR) replaced as the kubelet would for the container's
// env: literal values, and metadata.namespace as namespace.
func expand(c corev1.Container, namespace string) ([]string, error) {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = namespace
		}
	}
	var errs []error
	args := slices.Clone(c.Args)
	for i, a := range args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := vars[name]
			if !ok {
				errs = append(errs, fmt.Errorf("argument %q refers to $(%s), which the test cannot resolve", a, name))
			}
			return v
		})
	}
	return args, errors.Join(errs...)
}

// probePaths returns the paths of c's liveness and readiness probes, which must be on the port
// of the binary's --health-addr (healthPort).
func probePaths(t testing.TB, c corev1.Container, healthPort string) []string {
	t.Helper()
	if healthPort == "" {
		t.Fatalf("rbactest: container %q has no --health-addr=HOST:PORT argument for its probes", c.Name)
	}
	var paths []string
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		// CheckDeployment made sure both are HTTP probes on a port the container declares.
		port := p.HTTPGet.Port.String()
		for _, cp := range c.Ports {
			if cp.Name == port {
				port = strconv.Itoa(int(cp.ContainerPort))
			}
		}
		if port != healthPort {
			t.Fatalf("rbactest: container %q probes %s on port %s, but --health-addr serves port %s", c.Name, p.HTTPGet.Path, port, healthPort)
		}
		paths = append(paths, p.HTTPGet.Path)
	}
	return paths
}
