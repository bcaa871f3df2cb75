package featuregate

import (
	"flag"
	"strings"

	"github.com/spf13/pflag"
)

// FlagName is the flag AddFlag and AddGoFlag register, as in every Kubernetes component.
const FlagName = "feature-gates"

var (
	_ pflag.Value = (*Gate)(nil)
	_ flag.Value  = (*Gate)(nil)
)

// Type implements pflag.Value ("mapStringBool", as upstream).
func (g *Gate) Type() string { return "mapStringBool" }

// AddFlag registers --feature-gates on fs; its help text lists KnownFeatures. Each use of
// the flag calls Set, so values from repeated flags accumulate.
//
// Registration closes here (later Add fails with ErrFlagRegistered) because the help text
// is captured now and a feature added later would be settable but undocumented.
func (g *Gate) AddFlag(fs *pflag.FlagSet) {
	fs.Var(g, FlagName, g.flagUsage())
}

// AddGoFlag is AddFlag for the standard library's flag package. (*Gate itself is a
// flag.Value, so flag.Var(gate, ...) works too, with your own name and usage.)
func (g *Gate) AddGoFlag(fs *flag.FlagSet) {
	fs.Var(g, FlagName, g.flagUsage())
}

// flagUsage closes registration and returns the help text.
func (g *Gate) flagUsage() string {
	g.mu.Lock()
	g.flagRegistered = true
	g.mu.Unlock()
	return "A set of key=value pairs that describe feature gates for alpha/experimental features. " +
		"Options are:\n" + strings.Join(g.KnownFeatures(), "\n")
}
