// Package serving runs a Manager's HTTP servers: one per address, each
// serving the paths of the sites (health probes, metrics) that share it,
// over plain HTTP or over HTTPS with a certificate reloaded from disk or
// made in memory, every one with header, read, write and idle timeouts and
// a header size limit, so a slow or hostile client is cut off instead of
// holding a goroutine and its buffers.
//
// What is served (the handlers) and who may see it (package delegatedauth)
// are the caller's; this package only listens, serves and shuts down.
package serving
