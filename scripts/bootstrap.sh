#!/usr/bin/env bash
# Idempotent set-up of everything the portal and the test suite need on a fresh
# Debian 12 machine: system packages (when root), the uv workspace, data-plane builds
# and the frontend. Each step is skipped when its output is already current.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  postgresql                                   # embedded cluster (initdb / pg_ctl)
  clang llvm libbpf-dev bpftool iproute2 xdp-tools  # XDP data plane
  iverilog verilator                           # NetFPGA RTL: cocotb tests / running model
  ccache                                       # the model's C++ reused across checkouts (CI's)
  libpcap-dev tcpdump                          # packet I/O for the simulators
  chromium                                     # end-to-end UI tests
  make g++
  wrk                                          # load generator of bench/api_latency.py
  prometheus                                   # scrapes /metrics in the compose-config test
  openssl                                      # the testbed's P4Runtime certificates (testbed/tls.py)
  tcpreplay                                    # replays pcaps at a known rate (kpi collector test)
)

# each line says how long the set-up has run so far: CI's time budget shows where it goes
log() { printf '\033[1m[bootstrap +%ss]\033[0m %s\n' "$SECONDS" "$*"; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing system packages: ${missing[*]} (run as root or install them: apt-get install ${missing[*]})"
    exit 1
  fi
  log "installing system packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The reference P4 toolchain (p4c, simple_switch_grpc) ships beside the repository in shared/;
# it is what CI compiles slicing.p4 with and what the differential tests run against.
P4TOOLS=${P4TOOLS:-$PWD/../shared/p4tools}
if [[ -x $P4TOOLS/install.sh && $(id -u) -eq 0 ]]; then
  log "installing the reference P4 toolchain from $P4TOOLS"
  bash "$P4TOOLS/install.sh" /usr/local >/dev/null
elif ! command -v p4c >/dev/null 2>&1; then
  log "no P4 toolchain (p4c, simple_switch_grpc): the P4 checks against BMv2 will be skipped locally"
fi

if ! command -v uv >/dev/null 2>&1; then
  log "installing uv"
  python3 -m pip install -q uv
fi
log "syncing the Python workspace (uv.lock)"
# Bytecode compiled once here: with PYTHONDONTWRITEBYTECODE set (as on this machine) every
# interpreter would otherwise compile all it imports from source at each start (an API
# worker 5.9 s instead of 2.6 s; the suite starts hundreds of them).
uv sync --locked --all-packages --quiet --compile-bytecode
.venv/bin/python -m compileall -q -j0 backend/src drivers/*/src testbed/src >/dev/null

# p4runtime-shell (`sliceportal p4rt shell`, ADR 0003) in a virtualenv of its own: it pins
# protobuf 3.20.3 and ships the PyPI `p4` package, which would replace the workspace's own
# bindings (ADR 0007). In the checkout beside .venv, so it lives and goes with the checkout
# it was made for (uv's cache is no place for it: `uv cache clean` empties it; the wheels
# there make a new venv 0.5 s). Made anew only when its hash-locked requirements change: the
# stamp is the lock it was made from.
shell_lock=tools/p4runtime-shell/requirements.txt
shell_venv=.tools/p4runtime-shell
if [[ ! -x $shell_venv/bin/python ]] || ! cmp -s "$shell_lock" "$shell_venv/.lock-stamp"; then
  log "installing p4runtime-shell into $shell_venv ($shell_lock)"
  uv venv --quiet --clear --python 3.11 "$shell_venv"
  # no --compile-bytecode (2.2 s of 2.7): the shell runs under python -I, which ignores
  # PYTHONDONTWRITEBYTECODE, so its first start caches what it imports (+1.1 s, once)
  uv pip sync --quiet --python "$shell_venv/bin/python" --require-hashes "$shell_lock"
  cp "$shell_lock" "$shell_venv/.lock-stamp"
fi

for d in dataplane/*/; do
  if [[ -f "$d/Makefile" ]]; then
    log "building $d"
    make -s -C "$d" all
  fi
done

if [[ -f frontend/package.json ]]; then
  stamp=frontend/node_modules/.lock-stamp
  if [[ ! -f $stamp ]] || ! cmp -s frontend/package-lock.json "$stamp"; then
    log "installing frontend packages"
    (cd frontend && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
    cp frontend/package-lock.json "$stamp"
  fi
  log "building the frontend"
  (cd frontend && npm run -s build)
fi
log "ready"
