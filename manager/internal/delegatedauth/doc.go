// Package delegatedauth lets an HTTP request through only when the API
// server says so, the way kube-apiserver's own components delegate both
// decisions for their endpoints ("delegated authentication and
// authorization"): a TokenReview authenticates the request's bearer token,
// a SubjectAccessReview checks that its user may use the request's path as
// a non-resource URL (verb: the lower-cased method). No or a bad token is
// 401, no permission 403, an API server that cannot answer 500.
//
// Decisions are cached per token (hashed: the cache keeps none), verb and
// path, allowed ones for Options.AllowTTL and denied ones for
// Options.DenyTTL; errors never are. The cache is bounded, so a client
// spraying random tokens costs API calls, not memory.
//
// The client making the reviews needs create on tokenreviews and
// subjectaccessreviews: the ClusterRole system:auth-delegator.
package delegatedauth
