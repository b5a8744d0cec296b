#!/bin/bash
# slurmbench.sh - what the SPANK plugin and the node engine add to a step's
# start, on a real Slurm 22.05 started here by tests/helpers/slurm.bash
# (BENCHMARKS.md section 7).  Run from the build tree, as root:
#
#   bash tests/bench/slurmbench.sh [N]        (N steps per case, default 30)
#
# Cases, each N times `srun -n1 [--cosched=...] true` one after the other,
# wall time of the whole srun measured (date +%s%N):
#   plain      the plugin loaded, the step not co-scheduled (enforce=no)
#   engine     --cosched=gang with the node engine already running
#   nonotice   --cosched=gang, start=none and no engine (one notice line)
set -euo pipefail
N=${1:-30}
# shellcheck source=../helpers/standalone.bash
. "$(dirname "$0")/../helpers/standalone.bash"

slurm_start
[ -z "${SLURM_SKIP:-}" ] || { echo "cannot run: $SLURM_SKIP" >&2; exit 1; }
trap 'p=$("$COSCHED" status --json --socket "$CS_SOCKET" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)[\"engine\"][\"pid\"])" 2>/dev/null || true); [ -z "$p" ] || kill "$p"; slurm_stop' EXIT

measure() {   # LABEL SRUN-ARGS...
    local label=$1 i t0 t1 ms=()
    shift
    for ((i = 0; i < N; i++)); do
        t0=$(date +%s%N)
        srun -n1 "$@" true 2>/dev/null
        t1=$(date +%s%N)
        ms+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${ms[@]}" | sort -n | awk -v l="$label" '
        { v[NR] = $1 } END { printf "%-10s median %6.1f ms  p90 %6.1f ms  (n=%d)\n", l, v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9 + 0.5)] / 1000, NR }'
}

slurm_plugstack start=none
measure plain
slurm_plugstack start=none
measure nonotice --cosched=gang
slurm_plugstack start=ondemand quantum_ms=1000 idle_exit=60
srun -n1 --cosched=gang true      # starts the engine
measure engine --cosched=gang
