#!/usr/bin/env bash
# Proves the README's test command works on a machine that has nothing but Debian 12's base
# system, git and Debian's package mirror: clones this repository's HEAD into a fresh
# `debootstrap --variant=minbase bookworm` root, at the same path as this checkout (so
# ccache sees the same command lines), and runs `TESSERA_QUICK=1 scripts/test.sh` there,
# which must install everything else through scripts/setup.sh.
#
# The pristine root is made once and kept under ~/.cache/tessera/fresh-debian/SUITE; each run
# works on a copy, so packages installed by one run never hide a missing one from the next.
# apt's downloads and ccache are shared with the host to keep the cost down (ccache only
# answers for a compile whose headers are all present, so it cannot hide a missing package).
#
# Needs root (or passwordless sudo) for debootstrap, mounts and chroot; the mounts live in a
# private mount namespace and vanish with it.
# Usage: tests/fresh_machine/fresh_debian.sh [COMMAND]   (default: the quick suite)
# TESSERA_DEBIAN_SUITE=trixie tries the next Debian release (newer g++, clang and CMake).
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
command=${1:-TESSERA_QUICK=1 scripts/test.sh}
suite=${TESSERA_DEBIAN_SUITE:-bookworm}
mirror=${TESSERA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tessera/fresh-debian/$suite
pristine=$cache/minbase

if [ "$(id -u)" -ne 0 ]; then
  exec sudo -n --preserve-env=XDG_CACHE_HOME,TESSERA_DEBIAN_MIRROR,TESSERA_DEBIAN_SUITE "$0" "$@"
fi
for tool in debootstrap unshare chroot; do
  command -v "$tool" >/dev/null || { echo "fresh_debian: $tool not found (scripts/setup.sh installs it)" >&2; exit 1; }
done

start=$(date +%s)
mkdir -p "$cache/apt-archives/partial" "$cache/apt-lists/partial"
if [ ! -e "$pristine/.complete" ]; then
  echo "fresh_debian: making a minimal $suite root in $pristine (once)" >&2
  rm -rf "$pristine.partial"
  debootstrap --variant=minbase --include=git,ca-certificates --cache-dir="$cache/apt-archives" \
    "$suite" "$pristine.partial" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
  # What an installed system lists, not only the release debootstrap names.
  cat >"$pristine.partial/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF
  touch "$pristine.partial/.complete"
  rm -rf "$pristine"
  mv "$pristine.partial" "$pristine"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-fresh-debian.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
cp -a "$pristine" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The names an installed system has (Debian's installer writes them; debootstrap does not).
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" \
  >"$root/etc/hosts"
# The host's trust in the network between it and PyPI (a proxy's own CA, where there is one),
# as its name servers are: the Python package's build downloads its backend with pip.
trust=()
for bundle in "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
  if [ -n "$bundle" ] && [ -f "$bundle" ]; then
    cp "$bundle" "$root/etc/host-ca-certificates.crt"
    trust=(PIP_CERT=/etc/host-ca-certificates.crt SSL_CERT_FILE=/etc/host-ca-certificates.crt)
    break
  fi
done
ccache_dir=$(ccache -k cache_dir 2>/dev/null || true)
echo "fresh_debian: $(git -C "$repo" rev-parse --short HEAD) in a fresh $suite root: $command" >&2

# Inside a private mount namespace: the mounts below are gone when it exits.
unshare --mount --propagation private bash -euo pipefail -s -- "$root" "$repo" "$cache" "$ccache_dir" \
    "$command" "${trust[*]:-}" <<'INSIDE'
root=$1 repo=$2 cache=$3 ccache_dir=$4 command=$5 trust=$6
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
mount --bind "$cache/apt-lists" "$root/var/lib/apt/lists"
mkdir -p "$root/mnt/origin" "$root/root/.cache/ccache"
mount --bind -o ro "$repo" "$root/mnt/origin"
if [ -n "$ccache_dir" ] && [ -d "$ccache_dir" ]; then
  mount --bind "$ccache_dir" "$root/root/.cache/ccache"
fi
# $trust unquoted: a list of NAME=VALUE words without spaces, or none.
exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb $trust \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -euo pipefail -c 'git config --global --add safe.directory "*"
    git clone -q /mnt/origin "$0" && cd "$0" && eval "$1"' "$repo" "$command" </dev/null
INSIDE
echo "fresh_debian: passed in $(( $(date +%s) - start )) s" >&2
