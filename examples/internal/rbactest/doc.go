// Package rbactest proves an example's shipped deploy manifests against a real API server:
// that the ServiceAccount's rules are enough for the binary to converge, that each rule is
// needed (take one away and the binary says which verb on which resource it was refused), and
// that the Deployment passes the restricted Pod Security Standard.
//
// Load reads the manifests (a stream of YAML documents per file) and checks what can be
// checked without a server: no wildcards in any rule, one ServiceAccount, a Deployment that runs
// as it with a restricted security context and probes on the health port (CheckDeployment).
// Apply installs them on a testkit API server Env, in the test's namespace instead of
// theirs (cluster-scoped names get the namespace as suffix, so tests sharing a server stay
// apart), mints a token for the ServiceAccount (TokenRequest) and writes the kubeconfig the
// Deployment mounts with that token and the cluster's CA as the only credentials. Start then
// runs the binary in-process with the Deployment's own arguments, Process.AwaitProbes asks its
// health address what the Deployment's probes ask (Process.AwaitProbe waits for one answer and
// reason), Revoke takes one verb away from a role (and waits until the authorizer agrees), Grant
// applies an opt-in file of roles later, as an admin would, and Process.AwaitForbidden waits for
// the binary's error line that names a refusal. CheckMetricsAccess proves /metrics is read only by those granted it: 401
// without a token, 403 to the ServiceAccount's token, 200 once the manifests' metrics reader is
// bound to it (GrantMetrics).
//
// The package is for the examples' tests; it is not part of the library.
package rbactest
