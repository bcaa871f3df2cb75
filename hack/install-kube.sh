#!/usr/bin/env bash
# install-kube.sh builds kube-apiserver and etcd from Go module sources, for testkit's
# real-API-server Env (testkit.NewAPIServer).
#
# Why from sources: machines without internet access (CI here) cannot download the prebuilt
# binaries envtest uses, but they can reach the Go module proxy. k8s.io/kubernetes is a module on
# the proxy; its zip lacks the staging/ directories (they are modules of their own), so we point
# its k8s.io/* staging requirements at the published v0.x.y modules and build with -mod=mod.
#
# Idempotent: binaries are cached under ${CTRLKIT_KUBE_DIR:-$HOME/.cache/ctrlkit/kube/$KUBE_VERSION}
# and not rebuilt while they exist and answer --version with the expected version. The last line
# printed is that directory, so callers can do: dir=$(bash hack/install-kube.sh | tail -n1).
#
# Environment:
#   KUBE_VERSION      Kubernetes release to build (default v1.37.2)
#   CTRLKIT_KUBE_DIR  install directory (default $HOME/.cache/ctrlkit/kube/$KUBE_VERSION)
#   FORCE=1           rebuild even when cached binaries answer --version
#   WITH_KCM=1        also build kube-controller-manager, for hack/bench's side-by-side run of
#                     examples/replicaset and its ReplicaSet controller; CI does not need it
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
# Staging modules are published as v0.<minor>.<patch> for Kubernetes v1.<minor>.<patch>.
STAGING_VERSION=v0.${KUBE_VERSION#v1.}
KUBE_DIR=${CTRLKIT_KUBE_DIR:-$HOME/.cache/ctrlkit/kube/$KUBE_VERSION}
FORCE=${FORCE:-0}
WITH_KCM=${WITH_KCM:-0}

log() { echo "install-kube: $*" >&2; }
die() { log "error: $*"; exit 1; }

command -v go >/dev/null || die "go is not on PATH"
mkdir -p "$KUBE_DIR"

work=$(mktemp -d "${TMPDIR:-/tmp}/ctrlkit-install-kube.XXXXXX")
cleanup() {
	# Module cache copies are read-only; make them writable so rm can remove them.
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
	rm -f "$KUBE_DIR"/.*.partial.$$ 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two concurrent runs (two `make kube` in one tree) would build twice and race on the install;
# serialise them on a lock file when flock is available.
if command -v flock >/dev/null; then
	exec 9>"$KUBE_DIR/.lock"
	if ! flock -n 9; then
		log "another install-kube.sh holds $KUBE_DIR/.lock; waiting"
		flock 9
	fi
fi

# module_dir MODULE@VERSION prints the module's directory in the module cache, downloading it
# from the proxy if needed. Run outside any module so no go.mod or go.work is consulted.
module_dir() {
	local json dir
	json=$(cd "$work" && GOWORK=off GOFLAGS= go mod download -json "$1") || die "go mod download $1 failed: $json"
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
	[[ -n "$dir" && -d "$dir" ]] || die "go mod download $1 gave no Dir: $json"
	echo "$dir"
}

# copy_module SRC DST copies a module out of the read-only module cache into a writable tree
# without vendor/ or go.work, which would override our edited go.mod.
copy_module() {
	cp -R "$1" "$2"
	chmod -R u+w "$2"
	rm -rf "$2/vendor" "$2/go.work" "$2/go.work.sum"
}

# drop_local_replaces DIR removes every replace directive whose target is a relative path: those
# point into the monorepo checkout, which a module zip does not contain.
drop_local_replaces() {
	local dir=$1 mod
	for mod in $(awk '
		/^replace[[:space:]]*\($/ { inblock = 1; next }
		inblock && /^\)/ { inblock = 0; next }
		inblock && /=>[[:space:]]*\.\.?\// { print $1 }
		/^replace[[:space:]]+[^(]/ && /=>[[:space:]]*\.\.?\// { print $2 }
	' "$dir/go.mod"); do
		(cd "$dir" && go mod edit -dropreplace="$mod")
	done
}

# require_version DIR MODULE prints the version DIR's go.mod requires of MODULE.
require_version() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"
}

# healthy BIN WANT succeeds when BIN runs with --version and its output contains WANT.
healthy() {
	[[ -x "$1" ]] || return 1
	local out
	out=$("$1" --version 2>&1) || return 1
	[[ "$out" == *"$2"* ]]
}

# build DIR PKG OUT [ldflags...] builds PKG in DIR with the module's own go.mod and installs the
# result atomically at OUT (a half-written binary is never left behind).
build() {
	local dir=$1 pkg=$2 out=$3 ldflags=$4 partial
	partial="$(dirname "$out")/.$(basename "$out").partial.$$"
	(cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go build -buildvcs=false -trimpath -ldflags="-s -w $ldflags" -o "$partial" "$pkg")
	mv -f "$partial" "$out"
}

apiserver=$KUBE_DIR/kube-apiserver
kcm=$KUBE_DIR/kube-controller-manager
etcd=$KUBE_DIR/etcd
kube_src=""

# need_kube_source sets kube_src, downloading the module once (not in a subshell, so the
# result sticks).
need_kube_source() {
	if [[ -z "$kube_src" ]]; then
		log "downloading k8s.io/kubernetes@$KUBE_VERSION"
		kube_src=$(module_dir "k8s.io/kubernetes@$KUBE_VERSION")
	fi
}

# kube_tree prepares a buildable copy of k8s.io/kubernetes in $k (once) and the version
# ldflags in $ldflags.
k=""
ldflags=""
kube_tree() {
	[[ -n "$k" ]] && return
	need_kube_source
	k=$work/kubernetes
	copy_module "$kube_src" "$k"
	# Every staging module is required as v0.0.0 and replaced by ./staging/src/k8s.io/<name>;
	# require the published release instead.
	for mod in $(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$k/go.mod" | sort -u); do
		(cd "$k" && go mod edit -require="$mod@$STAGING_VERSION")
	done
	drop_local_replaces "$k"
	if grep -q '=> *\./' "$k/go.mod"; then
		die "k8s.io/kubernetes go.mod still has local replaces: $(grep '=> *\./' "$k/go.mod")"
	fi
	local minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	# What hack/lib/version.sh stamps into release builds, so --version and /version tell the
	# truth (otherwise they report v0.0.0-master).
	local vpkg=k8s.io/component-base/version cpkg=k8s.io/client-go/pkg/version p
	for p in $vpkg $cpkg; do
		ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
	done
}

# --- kube-apiserver --------------------------------------------------------------------------
start=$SECONDS
if [[ "$FORCE" != 1 ]] && healthy "$apiserver" "$KUBE_VERSION"; then
	log "kube-apiserver $KUBE_VERSION already installed"
else
	kube_tree
	log "building kube-apiserver $KUBE_VERSION (several minutes on 2 cores)"
	build "$k" ./cmd/kube-apiserver "$apiserver" "$ldflags"
	healthy "$apiserver" "$KUBE_VERSION" || die "built kube-apiserver does not report $KUBE_VERSION: $("$apiserver" --version 2>&1 || true)"
fi
if [[ "$WITH_KCM" == 1 ]]; then
	if [[ "$FORCE" != 1 ]] && healthy "$kcm" "$KUBE_VERSION"; then
		log "kube-controller-manager $KUBE_VERSION already installed"
	else
		kube_tree
		log "building kube-controller-manager $KUBE_VERSION (several minutes on 2 cores)"
		build "$k" ./cmd/kube-controller-manager "$kcm" "$ldflags"
		healthy "$kcm" "$KUBE_VERSION" || die "built kube-controller-manager does not report $KUBE_VERSION: $("$kcm" --version 2>&1 || true)"
	fi
fi
[[ -n "$k" ]] && chmod -R u+w "$k" && rm -rf "$k"
apiserver_secs=$((SECONDS - start))

# --- etcd ------------------------------------------------------------------------------------
start=$SECONDS
etcd_version=${ETCD_VERSION:-}
if [[ -z "$etcd_version" ]]; then
	# The version kubernetes itself is built and tested against.
	if [[ -f "$KUBE_DIR/etcd.version" ]]; then
		etcd_version=$(<"$KUBE_DIR/etcd.version")
	else
		need_kube_source
		etcd_version=$(require_version "$kube_src" go.etcd.io/etcd/server/v3)
		[[ -n "$etcd_version" ]] || die "k8s.io/kubernetes@$KUBE_VERSION go.mod does not require go.etcd.io/etcd/server/v3"
		echo "$etcd_version" >"$KUBE_DIR/etcd.version"
	fi
fi
if [[ "$FORCE" != 1 ]] && healthy "$etcd" "${etcd_version#v}"; then
	log "etcd $etcd_version already installed"
else
	log "downloading go.etcd.io/etcd/server/v3@$etcd_version"
	src=$(module_dir "go.etcd.io/etcd/server/v3@$etcd_version")
	e=$work/etcd
	copy_module "$src" "$e"
	# The server module replaces its sibling modules (api, client, pkg) with ../ paths; the
	# published versions it requires are the same release.
	drop_local_replaces "$e"
	log "building etcd $etcd_version"
	# The server module's root package is etcd's main (server/main.go calls etcdmain.Main).
	build "$e" . "$etcd" ""
	healthy "$etcd" "${etcd_version#v}" || die "built etcd does not report $etcd_version: $("$etcd" --version 2>&1 || true)"
fi
etcd_secs=$((SECONDS - start))

log "kube-apiserver: $apiserver (${apiserver_secs}s)"
log "etcd:           $etcd (${etcd_secs}s)"
echo "$KUBE_DIR"
