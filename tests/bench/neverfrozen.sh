#!/bin/bash
# neverfrozen.sh - a step the engine never freezes beside time-sliced ones,
# on a real Slurm 22.05 started here by tests/helpers/slurm.bash
# (BENCHMARKS.md section 10).  Run from the build tree, as root, on a quiet
# machine:
#
#   [CASES="AB ABC"] bash tests/bench/neverfrozen.sh [KERNEL [ITERATIONS [POLICY...]]]
#        (default: barrier 600000 gang tft flca)
#
# Batch jobs submitted at once to one node (OverSubscribe=FORCE:4), each one
# step of a share/demo kernel with one OpenMP thread per CPU of the node
# (passive wait, as cosched gives jobs): B in a partition whose MaxTime is
# its --time (2 minutes), so the engine never freezes its step
# (cosched-spank(8), TIME LIMITS); A (and C) with room (--time=10).  Cases:
# A and B; A, B and C.  Per case and policy, on a freshly started Slurm with
# the node engine at a 1 s quantum: each job's time from the first start to
# its end, and its normalised throughput alone / that time (alone: one job
# by itself, no cosched), their sum.  One line per case.
set -euo pipefail
# shellcheck source=../helpers/standalone.bash
. "$(dirname "$0")/../helpers/standalone.bash"

KERNEL=${1:-barrier}
ITERS=${2:-600000}
shift $(($# > 2 ? 2 : $#))
POLICIES=("$@")
[ ${#POLICIES[@]} -gt 0 ] || POLICIES=(gang tft flca)
NCPU=$(nproc)
DEMO=$COSCHED_BUILDDIR/share/demo
[ -x "$DEMO/$KERNEL" ] || { echo "neverfrozen: $DEMO/$KERNEL missing: run make first" >&2; exit 1; }
OUT=$(mktemp -d /tmp/neverfrozen.XXXXXX)
chmod 755 "$OUT"
engine_pid=
stop_all() {
    [ -z "$engine_pid" ] || { kill "$engine_pid" 2>/dev/null || true; wait_for 10 "! kill -0 $engine_pid 2>/dev/null" || true; }
    engine_pid=
    slurm_stop
}
trap 'stop_all; rm -rf "$OUT"' EXIT

# submit NAME SBATCH-OPTIONS SRUN-OPTION: one batch job, timestamps in $OUT
submit() {
    sbatch --parsable -n1 -c"$NCPU" -J "$1" $2 -o "$OUT/$1.out" \
        --export=ALL,OMP_NUM_THREADS=$NCPU,OMP_WAIT_POLICY=passive,GOMP_SPINCOUNT=0 \
        --wrap "date +%s.%N > $OUT/$1.start; srun -n1 -c$NCPU $3 $DEMO/$KERNEL -q -n $ITERS; date +%s.%N > $OUT/$1.end" |
        cut -d';' -f1
}

wait_all() {
    local id
    for id in "$@"; do
        slurm_wait_gone "$id" 600 || { echo "neverfrozen: job $id did not end" >&2; return 1; }
    done
}

cluster() {
    slurm_start
    [ -z "${SLURM_SKIP:-}" ] || { echo "neverfrozen: cannot run: $SLURM_SKIP" >&2; exit 1; }
    scontrol create PartitionName=short Nodes="$SLURM_NODE" MaxTime=2 State=UP OverSubscribe=FORCE:4
    slurm_plugstack start=none
    rm -f "$OUT"/*.start "$OUT"/*.end
}

cluster
wait_all "$(submit A "--time=10" "")"
ALONE=$(python3 -c 'import sys; print("%.2f" % (float(open(sys.argv[2]).read()) - float(open(sys.argv[1]).read())))' \
    "$OUT/A.start" "$OUT/A.end")
stop_all
echo "$KERNEL -n $ITERS alone: $ALONE s; $NCPU cpus"
echo "| jobs | policy | time A / B / C s | sum of normalised throughputs |"
echo "|---|---|---|---|"
for names in ${CASES:-AB ABC}; do
    for pol in "${POLICIES[@]}"; do
        cluster
        "$COSCHED" serve --socket "$CS_SOCKET" --policy "$pol" --quantum 1s --counters none \
            --policy-path "$COSCHED_SRCDIR/lua/policies" --quiet 2> "$OUT/engine.err" &
        engine_pid=$!
        wait_for 10 "[ -S '$CS_SOCKET' ]" || { cat "$OUT/engine.err" >&2; exit 1; }
        ids=()
        for n in $(echo "$names" | grep -o .); do
            case $n in
            B) ids+=("$(submit B "-p short --time=2" "--cosched=$pol")") ;;
            *) ids+=("$(submit "$n" "--time=10" "--cosched=$pol")") ;;
            esac
        done
        wait_all "${ids[@]}"
        python3 - "$OUT" "$names" "$pol" "$ALONE" <<'EOF'
import sys
out, names, pol, alone = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
st = {n: float(open(f"{out}/{n}.start").read()) for n in names}
en = {n: float(open(f"{out}/{n}.end").read()) for n in names}
t0 = min(st.values())
t = {n: en[n] - t0 for n in names}
print("| %s | %s | %s | %.2f |" % (names, pol, " / ".join("%.1f" % t[n] for n in names),
      sum(alone / t[n] for n in names)))
EOF
        stop_all
    done
done
