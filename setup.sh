#!/usr/bin/env bash
# One command that installs and starts everything the testbed needs, and is safe to run again:
# Debian packages, the Docker engine (started by hand where there is no systemd), the Python
# environment in .venv with the `testbed` command, and the agent image (built offline when no
# container registry is reachable). The Vagrantfile provisions with this same script.
#
# Usage: sudo ./setup.sh [--no-images]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log_dir=/var/log/testbed
build_images=1
for arg in "$@"; do
  case "$arg" in
    --no-images) build_images=0 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (allowed: --no-images)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: the testbed builds namespaces, bridges and containers and must run as root (try: sudo $0)" >&2
  exit 2
fi

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
mkdir -p "$log_dir"

# --- Debian packages -------------------------------------------------------------------------
packages=(docker.io mininet bridge-utils iptables nftables iproute2 tcpdump tshark iputils-ping
          debootstrap debian-archive-keyring busybox-static openssh-server python3-venv python3-dev
          gcc libc6-dev openjdk-17-jre-headless procps psmisc ethtool sumo sumo-tools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A Java runtime of version 17 or later that is already there (any vendor) serves Spark 4 as well.
if command -v java >/dev/null 2>&1 && \
   [ "$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)" -ge 17 ] 2>/dev/null; then
  missing=("${missing[@]/openjdk-17-jre-headless}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq >"$log_dir/apt.log" 2>&1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log_dir/apt.log" 2>&1 \
    || { echo "setup.sh: apt-get install failed; see $log_dir/apt.log" >&2; tail -20 "$log_dir/apt.log" >&2; exit 1; }
else
  say "Debian packages already installed"
fi

# --- Docker engine ---------------------------------------------------------------------------
if docker info >/dev/null 2>&1; then
  say "Docker engine already running"
else
  say "starting the Docker engine"
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl start docker
  else
    # No systemd: run dockerd detached from this shell so that it outlives the script.
    setsid nohup dockerd >"$log_dir/dockerd.log" 2>&1 < /dev/null &
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "setup.sh: dockerd did not come up in 60 s; see $log_dir/dockerd.log" >&2; exit 1; }
fi

# --- Python environment ----------------------------------------------------------------------
# Debian's python3 sees Debian's mininet module; the venv inherits it with system site packages.
venv="${TESTBED_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  say "creating the Python environment in $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
stamp="$venv/.installed-$(sha256sum "$here/pyproject.toml" | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  say "installing Python packages"
  "$venv/bin/pip" install -q --upgrade pip >"$log_dir/pip.log" 2>&1
  "$venv/bin/pip" install -q -e "$here[test]" >>"$log_dir/pip.log" 2>&1 \
    || { echo "setup.sh: pip install failed; see $log_dir/pip.log" >&2; tail -20 "$log_dir/pip.log" >&2; exit 1; }
  # cppyy (ns-3's bindings, for the 802.11 channel) builds its precompiled header on first import:
  # here once, not inside the first lab that uses the channel
  "$venv/bin/python" -c "import cppyy" >>"$log_dir/pip.log" 2>&1 \
    || { echo "setup.sh: importing cppyy failed; see $log_dir/pip.log" >&2; tail -20 "$log_dir/pip.log" >&2; exit 1; }
  rm -f "$venv"/.installed-*
  touch "$stamp"
else
  say "Python packages already installed"
fi
ln -sf "$venv/bin/testbed" /usr/local/bin/testbed

# --- Images ----------------------------------------------------------------------------------
if [ "$build_images" -eq 1 ]; then
  "$venv/bin/testbed" images build
fi

say "ready: try 'testbed doctor'"
