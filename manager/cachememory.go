package manager

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/bytesize"
)

// defaultStalenessInterval is how often the factory a Manager builds checks
// how far its informers lag the API server (informer.Options.StalenessCheck;
// set Options.Cache.StalenessCheck to change it, negative to turn it off).
const defaultStalenessInterval = time.Minute

// DebugInformersPath serves what the Manager's informer caches hold, on the
// metrics server, behind the same authentication and authorization as
// /metrics: a table by default, JSON with ?format=json.
const DebugInformersPath = "/debug/informers"

// MemoryBudgetCheck names the /readyz check a Manager adds when its factory
// has a memory budget of policy informer.BudgetFailReadiness: it fails while
// the caches are over the budget.
const MemoryBudgetCheck = "informer-memory"

// cacheLabels label the ctrlkit_informer_* series of one informer.
var cacheLabels = []string{"resource", "scope"}

var (
	descObjects = prometheus.NewDesc("ctrlkit_informer_objects",
		"Objects in an informer's cache.", cacheLabels, nil)
	descBytes = prometheus.NewDesc("ctrlkit_informer_bytes",
		"Estimated heap bytes an informer's cache keeps alive: its objects after managedFields stripping and sharing, client-go's store and built-in indexes, and the shared sub-objects its objects brought (counted once).", cacheLabels, nil)
	descShared = prometheus.NewDesc("ctrlkit_informer_shared_bytes",
		"Of ctrlkit_informer_bytes, the bytes in sub-objects shared with other cached objects.", cacheLabels, nil)
	descRatio = prometheus.NewDesc("ctrlkit_informer_dedup_ratio",
		"What an informer's objects would take with nothing shared, over ctrlkit_informer_bytes.", cacheLabels, nil)
	descDegraded = prometheus.NewDesc("ctrlkit_informer_degraded",
		"1 once a memory budget made the informer cache metadata only.", cacheLabels, nil)
	descLag = prometheus.NewDesc("ctrlkit_informer_resource_version_lag",
		"The API server's current resourceVersion minus the informer's last, at the last staleness check (absent when unknown).", cacheLabels, nil)
	descTable = prometheus.NewDesc("ctrlkit_informer_sharing_table_bytes",
		"The sharing table's own bookkeeping (its filter and an entry per shared sub-object).", nil, nil)
	descBudget = prometheus.NewDesc("ctrlkit_informer_memory_budget_bytes",
		"A memory budget of the informer caches (budget is \"factory\" or the informer's resource).", []string{"budget", "policy"}, nil)
)

// cacheCollector exports a factory's CacheMemory, Staleness and budgets.
type cacheCollector struct{ f *informer.Factory }

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descObjects, descBytes, descShared, descRatio, descDegraded, descLag, descTable, descBudget} {
		ch <- d
	}
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	mem := c.f.CacheMemory()
	for _, inf := range mem.Informers {
		lv := []string{inf.Resource, inf.Scope}
		ch <- prometheus.MustNewConstMetric(descObjects, prometheus.GaugeValue, float64(inf.Objects), lv...)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(inf.Bytes), lv...)
		ch <- prometheus.MustNewConstMetric(descShared, prometheus.GaugeValue, float64(inf.SharedBytes), lv...)
		if inf.Bytes > 0 {
			ch <- prometheus.MustNewConstMetric(descRatio, prometheus.GaugeValue, float64(inf.UnsharedBytes)/float64(inf.Bytes), lv...)
		}
		degraded := 0.0
		if inf.Degraded {
			degraded = 1
		}
		ch <- prometheus.MustNewConstMetric(descDegraded, prometheus.GaugeValue, degraded, lv...)
	}
	if len(mem.Informers) > 0 {
		ch <- prometheus.MustNewConstMetric(descTable, prometheus.GaugeValue, float64(mem.TableBytes))
	}
	for _, s := range c.f.Staleness() {
		if s.Lag >= 0 {
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(s.Lag), s.Resource, s.Scope)
		}
	}
	for _, b := range c.f.MemoryBudgets() {
		name := b.Informer
		if name == "" {
			name = "factory"
		}
		ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue, float64(b.Bytes), name, b.Policy.String())
	}
}

// debugInformers is the page at DebugInformersPath.
type debugInformers struct {
	Memory    informer.CacheMemory
	Staleness []informer.Staleness    `json:",omitempty"`
	Budgets   []informer.MemoryBudget `json:",omitempty"`
	// Clusters are the factories of the clusters a running
	// multicluster.Fleet engaged, by cluster.
	Clusters map[string]debugInformers `json:",omitempty"`
}

func debugPage(f *informer.Factory) debugInformers {
	return debugInformers{Memory: f.CacheMemory(), Staleness: f.Staleness(), Budgets: f.MemoryBudgets()}
}

// DebugInformersHandler serves DebugInformersPath: the informers by bytes,
// each with its top namespaces, lag and budget; then, for a running Runnable
// with a Factories method (multicluster.Fleet), each engaged cluster's.
func (m *Manager) DebugInformersHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := debugPage(m.factory)
		for _, run := range m.liveRunnables() {
			if fs, ok := run.(interface {
				Factories() map[string]*informer.Factory
			}); ok {
				for name, f := range fs.Factories() {
					if page.Clusters == nil {
						page.Clusters = map[string]debugInformers{}
					}
					page.Clusters[name] = debugPage(f)
				}
			}
		}
		if r.URL.Query().Get("format") == "json" {
			w.Header().Set("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(page)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(page.text()))
	})
}

func (p debugInformers) text() string {
	var b strings.Builder
	mem := p.Memory
	fmt.Fprintf(&b, "Informer caches: %d informers, about %s", len(mem.Informers), bytesize.Format(mem.Bytes))
	if mem.TableBytes > 0 {
		fmt.Fprintf(&b, " (sharing table %s)", bytesize.Format(mem.TableBytes))
	}
	b.WriteString("\n\n")
	lag := map[string]string{}
	for _, s := range p.Staleness {
		v := "?"
		if s.Lag >= 0 {
			v = strconv.FormatInt(s.Lag, 10)
		}
		lag[s.Resource+"\x00"+s.Scope] = v
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tSCOPE\tOBJECTS\tBYTES\tSHARED\tDEDUP\tLAG\tDEGRADED")
	for _, inf := range mem.Informers {
		ratio := "-"
		if inf.Bytes > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(inf.UnsharedBytes)/float64(inf.Bytes))
		}
		l := lag[inf.Resource+"\x00"+inf.Scope]
		if l == "" {
			l = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%v\n", inf.Resource, inf.Scope, inf.Objects,
			bytesize.Format(inf.Bytes), bytesize.Format(inf.SharedBytes), ratio, l, inf.Degraded)
	}
	_ = tw.Flush()
	for _, inf := range mem.Informers {
		if len(inf.Namespaces) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nTop namespaces of %s (%s):\n", inf.Resource, inf.Scope)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, ns := range inf.Namespaces {
			noun := "objects"
			if ns.Objects == 1 {
				noun = "object"
			}
			fmt.Fprintf(tw, "  %s\t%d %s\t%s\n", ns.Namespace, ns.Objects, noun, bytesize.Format(ns.Bytes))
		}
		_ = tw.Flush()
	}
	if len(p.Budgets) > 0 {
		b.WriteString("\nMemory budgets:\n")
		for _, bu := range p.Budgets {
			name, state := bu.Informer, "within"
			if name == "" {
				name = "factory"
			}
			if bu.Over {
				state = "OVER"
			}
			fmt.Fprintf(&b, "  %s: %s of %s (%s), %s\n", name, bytesize.Format(bu.Used), bytesize.Format(bu.Bytes), bu.Policy, state)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Clusters)) {
		fmt.Fprintf(&b, "\n\n== Cluster %s\n\n%s", name, p.Clusters[name].text())
	}
	return b.String()
}
