#!/bin/sh
# tests/fuzz/fuzz.sh - build the libFuzzer harnesses of tests/fuzz/ with clang
# and run each one for FUZZ_TIME seconds on its seed corpus (`make fuzz`;
# see tests/fuzz/README).
#
#   fuzz.sh SRCDIR BUILDDIR [TARGET...]      (default: every target)
#
# Environment (set by `make fuzz`): FUZZ_CC (clang), FUZZ_TIME (seconds per
# target), FUZZ_JOBS (targets run at once, default: the online CPUs; each
# target is one single-threaded libFuzzer process, so N CPUs run N targets
# in the wall time of one without taking fuzzing time from any), FUZZ_CFLAGS (hwloc's and Lua's -I flags), FUZZ_LIBS (hwloc, Lua,
# -lm), FUZZ_FLAGS (extra libFuzzer options for every run, e.g. -runs=0 to
# replay the corpus only).  BUILDDIR holds the configured config.h.
# A harness is rebuilt when a source is newer than it.  Runs write their new
# inputs to BUILDDIR/tests/fuzz/work/TARGET (the seeds in the source tree are
# read only) and a crashing input to BUILDDIR/tests/fuzz/work/TARGET-crash-*.
# Exit status 0 when every target ran its time without a crash, a leak, an
# UBSan report or a hang; 1 otherwise (the report and the input are named).
set -eu
src=$1
build=$2
shift 2
cc=${FUZZ_CC:-clang}
time=${FUZZ_TIME:-10}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in
'' | *[!0-9]* | 0 | 00*) echo "fuzz: FUZZ_JOBS must be a number of targets run at once (1 or more), not '$jobs'" >&2; exit 2 ;;
esac
# jansson (core/json.h) through pkg-config, also when FUZZ_CFLAGS/FUZZ_LIBS are not given
jansson_cflags=$(pkg-config --cflags jansson 2>/dev/null) || jansson_cflags=
jansson_libs=$(pkg-config --libs jansson 2>/dev/null) || jansson_libs=-ljansson
cflags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# target: the launcher and plugin sources its harness needs
sources() {
    case $1 in
    proto) echo launcher/shared/proto.c ;;
    spank) echo plugin/spank_conf.c launcher/shared/duration.c ;;
    jobfile) echo launcher/core/jobfile.c launcher/core/util.c launcher/shared/duration.c launcher/core/store.c launcher/core/json.c ;;
    profile | formula) echo launcher/counters/profile.c launcher/counters/perfspec.c launcher/counters/formula.c launcher/core/util.c launcher/shared/duration.c ;;
    simnode | simapps) echo launcher/sim/sim.c launcher/sim/files.c launcher/core/topo.c launcher/core/util.c launcher/shared/duration.c launcher/core/json.c ;;
    replay) echo launcher/counters/replay.c launcher/counters/profile.c launcher/counters/perfspec.c launcher/counters/formula.c launcher/core/util.c launcher/shared/duration.c launcher/core/json.c ;;
    store) echo launcher/core/util.c launcher/shared/duration.c launcher/core/json.c ;;     # store.c is included by the harness
    report) echo launcher/cli/report.c launcher/engine/trace.c launcher/cli/opts.c launcher/core/store.c launcher/core/util.c launcher/shared/duration.c launcher/core/json.c ;;
    *) return 1 ;;
    esac
}
all="proto spank jobfile profile formula simnode simapps replay store report"
[ $# -gt 0 ] || set -- $all

command -v "$cc" >/dev/null 2>&1 || {
    echo "fuzz: no $cc: install clang and libclang-rt-14-dev (Debian 12) or give FUZZ_CC" >&2
    exit 1
}
abs=$(cd "$src" && pwd)
abs_build=$(cd "$build" && pwd)
out=$build/tests/fuzz
mkdir -p "$out/work"
# each target once, in the order given (two runs of one target would share its files)
uniq=
for t in "$@"; do
    sources "$t" >/dev/null || { echo "fuzz: unknown target '$t' (targets: $all)" >&2; exit 2; }
    case " $uniq " in *" $t "*) ;; *) uniq="$uniq $t" ;; esac
done
# shellcheck disable=SC2086
set -- $uniq

# Several targets at once: each runs as `fuzz.sh SRC BUILD TARGET` with its
# messages kept in work/TARGET.out, printed in the order of the targets
# once all have ended (so that two reports never interleave).
if [ "$jobs" -gt 1 ] && [ $# -gt 1 ]; then
    for t in "$@"; do rm -f "$out/work/$t.out"; done
    echo "fuzz: $# targets, $jobs at once, $time s each; their messages follow when all have ended" >&2
    status=0
    printf '%s\n' "$@" |
        FUZZ_JOBS=1 xargs -P "$jobs" -I '{}' sh -c 'exec sh "$0" "$1" "$2" "$3" 2>"$4/work/$3.out"' \
            "$0" "$src" "$build" '{}' "$out" || status=1
    for t in "$@"; do
        cat "$out/work/$t.out" >&2 2>/dev/null || { echo "fuzz: $t did not run" >&2; status=1; }
    done
    exit $status
fi

status=0
for t in "$@"; do
    srcs=$(sources "$t")
    bin=$out/fuzz_$t
    deps="$src/tests/fuzz/fuzz_$t.c $src/tests/fuzz/fuzz.h"
    [ "$t" != formula ] || deps="$deps $src/tests/fuzz/fuzz_profile.c"
    [ "$t" != store ] || deps="$deps $src/launcher/core/store.c"
    deps="$deps $src/launcher/core/json.h"
    paths=
    for s in $srcs; do
        paths="$paths $src/$s"
    done
    stale=
    [ -x "$bin" ] || stale=1
    for f in $deps $paths; do
        [ -n "$stale" ] || [ ! "$f" -nt "$bin" ] || stale=1
    done
    if [ -n "$stale" ]; then
        echo "fuzz: building $bin" >&2
        # shellcheck disable=SC2086
        $cc $cflags -DHAVE_CONFIG_H -I"$build" -I"$src/launcher" -DCOSCHED_DATADIR="\"$abs\"" \
            -DCOSCHED_SRCDIR="\"$abs\"" -DCOSCHED_BUILDDIR="\"$abs_build\"" ${FUZZ_CFLAGS:-} $jansson_cflags \
            -o "$bin" "$src/tests/fuzz/fuzz_$t.c" $paths ${FUZZ_LIBS:-} $jansson_libs || {
            echo "fuzz: cannot build fuzz_$t with $cc (libFuzzer is in libclang-rt-14-dev)" >&2
            exit 1
        }
    fi
    mkdir -p "$out/work/$t"
    log=$out/work/$t.log
    echo "fuzz: $t for $time s" >&2
    # halt_on_error: the first UBSan report ends the run with an error
    if UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
        "$bin" -max_total_time="$time" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -error_exitcode=77 -timeout_exitcode=77 -print_final_stats=1 \
        -artifact_prefix="$out/work/$t-" ${FUZZ_FLAGS:-} \
        "$out/work/$t" "$src/tests/fuzz/corpus/$t" >"$log" 2>&1; then
        grep -h '^stat::number_of_executed_units' "$log" | sed "s/^stat::/fuzz: $t: /" >&2 || true
    else
        echo "fuzz: $t FAILED; the report ($log):" >&2
        grep -v '^#[0-9]' "$log" | tail -60 >&2
        ls "$out/work/$t"-* 2>/dev/null | sed 's/^/fuzz: input: /' >&2 || true
        status=1
    fi
done
exit $status
