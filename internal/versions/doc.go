// Package versions is the one comparison of resourceVersions that write fences, the staleness check
// and informer.Version share: "the cache has reached version V" means the same thing to each.
//
// resourceVersions are opaque to clients by contract, but an etcd-backed API server's are
// etcd revisions, integers that grow across every resource, and kube-apiserver itself compares
// them so (k8s.io/apimachinery/pkg/util/resourceversion). A version that is not an integer
// cannot be judged; each caller says what that means for it, and none of them ever waits on
// what it cannot judge.
package versions
