#!/bin/sh
# share/setup.sh - set up a fresh Debian 12 machine (as root), build cosched
# in the source tree, and then run the demo or the whole test suite.
#
#   sh share/setup.sh demo    install, build, run the demo (3 OpenMP workloads)
#   sh share/setup.sh check   install, build, run every test (`make check`)
#
# Only Debian packages that are missing are installed.  The build is the
# ordinary autotools one, so `./configure && make && make install` works
# too once the packages are there.
set -eu
what=${1:-}
case "$what" in
demo|check) ;;
*) echo "usage: sh share/setup.sh demo|check" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
top=$(pwd)

pkgs="build-essential autoconf automake libtool pkg-config libhwloc-dev hwloc liblua5.4-dev lua5.4 libnuma-dev libjansson-dev libglpk-dev bats likwid python3 python3-jsonschema slurmctld slurmd slurm-client munge libslurm-dev clang libclang-rt-14-dev gfortran libomp-14-dev qemu-system-x86 busybox-static cpio systemd dbus numactl strace chromium debhelper lintian rpm"
missing=
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: these Debian packages are missing:$missing; run as root (or install them) and try again" >&2
        exit 1
    fi
    echo "setup: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    autoreconf -fi
fi
# automake ships the TAP driver but does not install it by itself
[ -f build-aux/tap-driver.sh ] || cp "$(automake --print-libdir)/tap-driver.sh" build-aux/
if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    ./configure -q
fi
make -s -j"$(nproc)"
[ "$what" != check ] || make -s -j"$(nproc)" check-progs   # the tests' programs; the tests themselves run serially

case "$what" in
demo)
    PATH="$top/share/demo:$PATH" COSCHED_DATADIR="$top" \
        ./cosched run --policy tft --quantum 500ms --jobs share/demo/demo.jobs
    ;;
check)
    status=0
    make -s check || status=$?   # serial: the tests measure CPU shares on all cores
    # the parsers under libFuzzer (tests/fuzz/README): 60 s per target, one per CPU at once
    if [ "$status" -eq 0 ]; then
        make -s fuzz FUZZ_TIME=60 || { echo "setup: make fuzz failed" >&2; status=1; }
    fi
    # the release tarball builds and installs (tests already ran above)
    if [ "$status" -eq 0 ]; then
        make -s distcheck TESTS= >distcheck.out 2>&1 || { cat distcheck.out; echo "setup: make distcheck failed" >&2; status=1; }
    fi
    # the engine's tiers again under ASan + UBSan: any report fails CI (Makefile.am)
    if [ "$status" -eq 0 ]; then
        make -s check-asan || { echo "setup: make check-asan failed (sanitizer reports above, if any)" >&2; status=1; }
    fi
    # cgroup v2 with the cpuset controller and 2 NUMA nodes, in a VM (tests/vm/README)
    if [ "$status" -eq 0 ]; then
        make -s check-vm || { echo "setup: make check-vm failed" >&2; status=1; }
    fi
    # one closing line that any CI reader understands
    awk '/^# PASS:/ {p=$3} /^# FAIL:/ {f=$3} /^# ERROR:/ {e=$3} /^# SKIP:/ {s=$3}
         END {printf "%d passed, %d failed, %d skipped\n", p, f+e, s}' test-suite.log
    [ "$status" -eq 0 ] || { for l in tests/*.log; do grep -q '^not ok' "$l" && { echo "== $l"; cat "$l"; }; done; exit "$status"; }
    ;;
esac
