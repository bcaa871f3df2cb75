# ctrlkit developer entry points. `make test` is what CI runs (.ci/run).
GO        ?= go
PKGS      ?= ./...
# Every fuzz target runs this long in `make fuzz` (a smoke run; use FUZZTIME=10m to hunt).
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
BENCHCOUNT ?= 6

.PHONY: all test fmt-check vet lint bench bench-peers fuzz tidy kube generate surface

all: test

## test: gofmt check, go vet and the race-enabled test suite (the CI gate).
test: fmt-check vet
	$(GO) test -race -count=1 $(PKGS)
	$(GO) test -count=1 -tags wqmap ./workqueue/
	cd hack/featuregate-compat && $(GO) test -race -count=1 ./...
	cd hack/tools && $(GO) test -count=1 ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags wqmap ./workqueue/
	@if [ -f hack/bench/go.mod ]; then cd hack/bench && $(GO) vet ./...; fi
	cd hack/featuregate-compat && $(GO) vet ./...
	cd hack/tools && $(GO) vet ./...

## lint: formatting and vet for the main module and the benchmark module.
lint: fmt-check vet

## bench: in-package benchmarks, then ctrlkit side by side with its peers (hack/bench).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)
	$(MAKE) bench-peers

bench-peers:
	cd hack/bench && BENCHTIME=$(BENCHTIME) BENCHCOUNT=$(BENCHCOUNT) ./run.sh

## fuzz: run every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

tidy:
	$(GO) mod tidy
	@if [ -f hack/bench/go.mod ]; then cd hack/bench && $(GO) mod tidy; fi

## generate: run the examples' go:generate lines: controller-gen (pinned in hack/tools/go.mod)
## writes the deepcopy functions and CRD manifests of their API packages; and rewrite the table of
## client-go's typed clients (internal/builtin) from kubernetes.Interface. Commit the result.
generate:
	$(GO) generate ./examples/...
	$(GO) test ./internal/builtin -run TestGeneratedGetters -update

## surface: the exported names of the everyday packages (and all public ones), as the issues count them.
surface:
	$(GO) run ./hack/apisurface controller informer manager client predicate
	$(GO) run ./hack/apisurface $$($(GO) list -f '{{.Dir}}' ./... | grep -v -e /internal -e /examples -e /hack -e /cmd | sed "s|^$$(pwd)/||")

## kube: build kube-apiserver and etcd from Go module sources (see hack/install-kube.sh).
kube:
	bash hack/install-kube.sh
