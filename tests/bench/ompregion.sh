#!/bin/bash
# ompregion.sh - what the OpenMP shim adds to one outermost region
# (BENCHMARKS.md section 12): tests/progs/ompbench, REPEATS rounds of N
# regions per cell.  From the build tree, as root, on a quiet machine:
#
#   bash tests/bench/ompregion.sh [REPEATS [N]]        default 21 200000
#   OLD_SHIM=/path/libcosched-omp.so bash tests/bench/ompregion.sh   also a column for that shim
#
# Cells: kernel empty (an empty region) and barrier (~0.2 us of work per
# thread, then the region's end barrier), teams of 1, 2 and all CPUs
# (OMP_NUM_THREADS), and:
#   none      no shim
#   old       OLD_SHIM, if given, without a page
#   no page   this shim, no page (standalone: revalidation on the coarse clock)
#   page      this shim with a page whose generation never moves (ompbench -P,
#             as under cosched between two switches); its reverse channel on
# Every run is pinned to the last CPU (a team of T to the last T).  A round
# runs each column once, back to back; the table gives each column's median
# ns per region with (min-max), and for the shim the median of its
# difference to "none" in the same round, with the middle half of those
# differences [q1, q3]: pairing the runs cancels the machine's slow drift,
# which moves "none" alone by tens of ns from run to run.
set -eu
top=$(pwd)
bench=$top/tests/progs/ompbench
shim=$top/launcher/omp/libcosched-omp.so
[ -x "$bench" ] && [ -f "$shim" ] || { echo "ompregion.sh: run it from the build tree after make check-progs" >&2; exit 2; }
reps=${1:-21}
n=${2:-200000}
old=${OLD_SHIM:-}
ncpu=$(nproc)

one() {  # one THREADS KERNEL PRELOAD [ARGS]: ns per region of one run
    local t=$1 k=$2 pre=$3; shift 3
    env OMP_NUM_THREADS="$t" LD_PRELOAD="$pre" taskset -c "$((ncpu - t))-$((ncpu - 1))" "$bench" -k "$k" -n "$n" "$@" |
        awk -F'ns_per_region=' 'NF == 2 {print $2}'
}

# row KERNEL THREADS: one table row
row() {
    local k=$1 t=$2 i
    for ((i = 0; i < reps; i++)); do
        printf '%s %s %s %s\n' "$(one "$t" "$k" "")" "$(one "$t" "$k" "$shim")" "$(one "$t" "$k" "$shim" -P)" \
            "$( [ -n "$old" ] && one "$t" "$k" "$old" || echo -)"
    done | awk -v k="$k" -v t="$t" -v old="$old" '
        function sort(a, m,   i, j, x) { for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
        function q(a, m, f) { return a[int((m - 1) * f + 1.5)] }
        function col(c,   a, r) { for (r = 1; r <= NR; r++) a[r] = v[r, c]; sort(a, NR); return sprintf("%.0f (%.0f-%.0f)", q(a, NR, 0.5), a[1], a[NR]) }
        function diff(c,   a, r) { for (r = 1; r <= NR; r++) a[r] = v[r, c] - v[r, 1]; sort(a, NR); return sprintf("%.0f [%.0f, %.0f]", q(a, NR, 0.5), q(a, NR, 0.25), q(a, NR, 0.75)) }
        { for (c = 1; c <= 4; c++) v[NR, c] = $c }
        END {
            line = "| " k " | " t " | " col(1) " |"
            if (old != "") line = line " " col(4) " |"
            line = line " " col(2) " | " col(3) " |"
            if (old != "") line = line " " diff(4) " |"
            print line " " diff(2) " | " diff(3) " |"
        }'
}

echo "ompregion.sh: $(date -u '+%F %T') UTC, $(uname -r), $ncpu cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $reps rounds x $n regions per cell"
hdr="| kernel | team | none |"; sep="|---|---|---|"
[ -n "$old" ] && { hdr="$hdr old shim |"; sep="$sep---|"; }
hdr="$hdr no page | page |"; sep="$sep---|---|"
[ -n "$old" ] && { hdr="$hdr old - none |"; sep="$sep---|"; }
echo "$hdr no page - none | page - none |"
echo "$sep---|---|"
teams="1 2"
[ "$ncpu" -gt 2 ] && teams="$teams $ncpu"
for k in empty barrier; do
    for t in $teams; do
        row "$k" "$t"
    done
done
