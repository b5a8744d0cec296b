#!/bin/bash
# slurmgang.sh - cosched against Slurm's own gang scheduling, on a real Slurm
# 22.05 started here by tests/helpers/slurm.bash (issue 11 point 7;
# BENCHMARKS.md section 9).  Run from the build tree, as root, on a quiet
# machine:
#
#   bash tests/bench/slurmgang.sh [SCALE]     (SCALE multiplies the job lengths, default 1)
#
# The mix: four batch jobs, each one step of one of cosched's kernels
# (share/demo: stream S, matmul C, compute N, barrier N) on every CPU of the
# node (-c NPROC), about 20 s alone each at SCALE 1.  All four are submitted
# at once to one node whose partition lets them share it (OverSubscribe=FORCE:4).
# Cases, each on a freshly started Slurm:
#   alone        each job by itself (the reference for normalised throughput)
#   slurm-gang   PreemptMode=GANG, SchedulerTimeSlice=30 (Slurm's default
#                slice): slurmctld suspends and resumes whole jobs (SIGSTOP/
#                SIGCONT) so that one job at a time holds the cores
#   linux        neither: the four jobs share the cores under the kernel (CFS)
#   cosched-gang srun --cosched=gang, the node engine (cosched serve) at a 1 s
#                quantum, freezing steps through Slurm's step freezer
#   cosched-flca srun --cosched=flca:class=X with each job's class hint
# Every job gets the same OpenMP environment (OMP_NUM_THREADS=NPROC,
# OMP_WAIT_POLICY=passive, as cosched gives jobs by default).
# Measured per job: start and end of its step (date in the batch script, so
# Slurm's own suspensions are inside); per case: makespan (first start to
# last end), each job's normalised throughput alone_s / (end - first start)
# - the fraction of a node's worth of progress it got while the mix ran -
# their sum, mean and spread (max - min); for the cosched cases the engine's
# mean switch time (its trace).  One line per case on stdout; the Markdown
# table at the end.
set -euo pipefail
SCALE=${1:-1}
# shellcheck source=../helpers/standalone.bash
. "$(dirname "$0")/../helpers/standalone.bash"

DEMO=$COSCHED_BUILDDIR/share/demo
for k in stream matmul compute barrier; do
    [ -x "$DEMO/$k" ] || { echo "slurmgang: $DEMO/$k missing: run make first" >&2; exit 1; }
done
NCPU=$(nproc)
OUT=$(mktemp -d /tmp/slurmgang.XXXXXX)
chmod 755 "$OUT"
# name class iterations (about 20 s alone with 2 threads on the development VM)
JOBS="stream S 2000
matmul C 20
compute N 350
barrier N 400000"

iters() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s + 0.5); print v < 1 ? 1 : v }'; }

# submit NAME CLASS ITER SRUN-OPTION...: one batch job, timestamps in $OUT
submit() {
    local name=$1 cls=$2 n=$3
    shift 3
    sbatch --parsable -n1 -c"$NCPU" -J "$name" -o "$OUT/$name.out" \
        --export=ALL,OMP_NUM_THREADS=$NCPU,OMP_WAIT_POLICY=passive,GOMP_SPINCOUNT=0 \
        --wrap "date +%s.%N > $OUT/$name.start; srun -n1 -c$NCPU $* $DEMO/$name -q -n $n; echo \$? > $OUT/$name.rc; date +%s.%N > $OUT/$name.end" |
        cut -d';' -f1
}

wait_all() {
    local id
    for id in "$@"; do
        [[ $id =~ ^[0-9]+$ ]] || { echo "slurmgang: sbatch gave no job id ('$id')" >&2; return 1; }
        slurm_wait_gone "$id" 3600 || { echo "slurmgang: job $id did not end" >&2; return 1; }
    done
}

start_cluster() {   # EXTRA-CONF
    SLURM_EXTRA_CONF=$1 slurm_start
    [ -z "${SLURM_SKIP:-}" ] || { echo "slurmgang: cannot run: $SLURM_SKIP" >&2; exit 1; }
}

engine_pid=
stop_all() {
    [ -z "$engine_pid" ] || { kill "$engine_pid" 2>/dev/null || true; wait_for 10 "! kill -0 $engine_pid 2>/dev/null" || true; }
    engine_pid=
    slurm_stop
}
trap 'stop_all; rm -rf "$OUT"' EXIT

declare -A ALONE
# alone: one job at a time, the reference
start_cluster ""
slurm_plugstack start=none
while read -r name cls n; do
    rm -f "$OUT"/*.start "$OUT"/*.end
    id=$(submit "$name" "$cls" "$(iters "$n")")
    wait_all "$id"
    ALONE[$name]=$(awk '{ s = $1 } END { getline e < "'"$OUT/$name.end"'"; printf "%.3f", e - s }' "$OUT/$name.start")
    echo "alone        $name ${ALONE[$name]} s"
done <<< "$JOBS"
stop_all

ROWS=()
# run CASE EXTRA-CONF POLICY-OR-EMPTY
run_case() {
    local label=$1 conf=$2 pol=$3 ids=() opt
    start_cluster "$conf"
    slurm_plugstack start=none
    rm -f "$OUT"/*.start "$OUT"/*.end "$OUT"/*.rc "$OUT/engine.trace"
    if [ -n "$pol" ]; then
        "$COSCHED" serve --socket "$CS_SOCKET" --policy "$pol" --quantum 1s --counters none \
            --policy-path "$COSCHED_SRCDIR/lua/policies" --trace "$OUT/engine.trace" --quiet 2>"$OUT/engine.err" &
        engine_pid=$!
        wait_for 10 "[ -S '$CS_SOCKET' ]" || { cat "$OUT/engine.err" >&2; exit 1; }
    fi
    while read -r name cls n; do
        opt=
        case $pol in
        flca) opt="--cosched=flca:class=$cls" ;;
        ?*) opt="--cosched=$pol" ;;
        esac
        ids+=("$(submit "$name" "$cls" "$(iters "$n")" $opt)")
    done <<< "$JOBS"
    wait_all "${ids[@]}"
    local row
    row=$(python3 - "$OUT" "$label" "${ALONE[stream]}" "${ALONE[matmul]}" "${ALONE[compute]}" "${ALONE[barrier]}" <<'EOF'
import json, os, sys
out, label = sys.argv[1], sys.argv[2]
alone = dict(zip(["stream", "matmul", "compute", "barrier"], map(float, sys.argv[3:7])))
st = {n: float(open(f"{out}/{n}.start").read()) for n in alone}
en = {n: float(open(f"{out}/{n}.end").read()) for n in alone}
rc = {n: open(f"{out}/{n}.rc").read().strip() for n in alone}
bad = [n for n in alone if rc[n] != "0"]
t0 = min(st.values())
mk = max(en.values()) - t0
thr = {n: alone[n] / (en[n] - t0) for n in alone}
sw = ""
tr = f"{out}/engine.trace"
if os.path.exists(tr):
    us = [json.loads(l)["switch_us"] for l in open(tr) if '"type":"step"' in l]
    sw = "%.0f" % (sum(us) / len(us)) if us else "-"
v = list(thr.values())
print("| %s | %.1f | %.3f | %.3f | %.3f | %s | %s |%s" % (label, mk, sum(v), sum(v) / len(v), max(v) - min(v),
      " / ".join("%.2f" % thr[n] for n in alone), sw or "-", (" FAILED: " + ",".join(bad)) if bad else ""))
EOF
)
    echo "$row"
    ROWS+=("$row")
    stop_all
}

run_case slurm-gang "PreemptMode=GANG
SchedulerTimeSlice=30" ""
run_case linux "" ""
run_case cosched-gang "" gang
run_case cosched-flca "" flca

echo
echo "alone (s): stream ${ALONE[stream]}, matmul ${ALONE[matmul]}, compute ${ALONE[compute]}, barrier ${ALONE[barrier]}; scale $SCALE; $NCPU cpus"
echo "| case | makespan s | sum norm. thr. | mean | max - min | stream / matmul / compute / barrier | mean switch us |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
