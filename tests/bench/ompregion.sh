#!/bin/bash
# ompregion.sh - what the OpenMP shim adds to one outermost region
# (BENCHMARKS.md section 12): tests/progs/ompbench, REPEATS runs of N regions
# per cell, the median and the spread (min-max) of ns per region.  From the
# build tree, as root, under the CPU lock on a quiet machine:
#
#   bash tests/bench/ompregion.sh [REPEATS [N]]        default 7 200000
#   OLD_SHIM=/path/libcosched-omp.so bash tests/bench/ompregion.sh   also a column for that shim
#
# Cells: kernel empty (an empty region) and barrier (~0.2 us of work per
# thread, then the region's end barrier), teams of 1, 2 and all CPUs
# (OMP_NUM_THREADS), and:
#   none      no shim
#   old       OLD_SHIM, if given (the shim before the page: one sched_getaffinity per region)
#   no page   this shim, no page (standalone: revalidation on the coarse clock)
#   page      this shim with a page whose generation never moves (ompbench -P,
#             as under cosched between two switches); its reverse channel on
set -eu
top=$(pwd)
bench=$top/tests/progs/ompbench
shim=$top/launcher/omp/libcosched-omp.so
[ -x "$bench" ] && [ -f "$shim" ] || { echo "ompregion.sh: run it from the build tree after make check-progs" >&2; exit 2; }
reps=${1:-7}
n=${2:-200000}
old=${OLD_SHIM:-}

cell() {  # cell THREADS KERNEL PRELOAD [ARGS]: "median spread" of ns per region
    local t=$1 k=$2 pre=$3; shift 3
    for ((i = 0; i < reps; i++)); do
        env OMP_NUM_THREADS="$t" LD_PRELOAD="$pre" "$bench" -k "$k" -n "$n" "$@" | awk -F'ns_per_region=' 'NF == 2 {print $2}'
    done | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                               printf "%.0f (%.0f-%.0f)", m, v[1], v[NR] }'
}
echo "ompregion.sh: $(date -u '+%F %T') UTC, $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $reps x $n regions per cell"
hdr="| kernel | team | none |"; sep="|---|---|---|"
[ -n "$old" ] && { hdr="$hdr old shim |"; sep="$sep---|"; }
echo "$hdr no page | page | no page - none | page - none |"
echo "$sep---|---|---|---|"
teams="1 2"
[ "$(nproc)" -gt 2 ] && teams="$teams $(nproc)"
for k in empty barrier; do
    for t in $teams; do
        a=$(cell "$t" "$k" "")
        row="| $k | $t | $a |"
        [ -n "$old" ] && row="$row $(cell "$t" "$k" "$old") |"
        b=$(cell "$t" "$k" "$shim")
        c=$(cell "$t" "$k" "$shim" -P)
        echo "$row $b | $c | $(( ${b%% *} - ${a%% *} )) | $(( ${c%% *} - ${a%% *} )) |"
    done
done
