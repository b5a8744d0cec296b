#!/usr/bin/env bats
# 63-slurm-multinode: a step spanning two nodes (two slurmd on this machine,
# Debian's Slurm is built for multiple slurmd) is never frozen on either node
# while a one-node step beside it is co-scheduled by time slicing: cosched
# only folds steps that span nodes (cosched(1) SLURM).  Both nodes' plugins
# reach the same engine here (one machine, one socket); it keeps each node's
# part of the step apart, as each node's own engine would.  (The policy
# schedules only the steps it may freeze, on the cores the never-frozen one
# does not keep (cosched.never_frozen): beside ONE other step gang would
# never freeze that one either, so the rotation needs two one-node steps.)

load helpers/common
load helpers/slurm

setup_file() {
    SLURM_NNODES=2 slurm_start
}

teardown_file() {
    slurm_stop
}

setup() {
    slurm_test_setup start=ondemand quantum_ms=200 idle_exit=3
    BG=
}

teardown() {
    slurm_test_teardown 10
}

fstate() {   # NODE JOB STEP
    cat "$CGROUP_ROOT/freezer/slurm_$1/uid_0/job_$2/step_$3/freezer.state" 2>/dev/null || echo GONE
}

@test "two slurmd run here: a job gets both nodes" {
    run srun -N2 -n2 hostname
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(sinfo -h -N -o %N | sort -u | wc -l)" -eq 2 ]
}

@test "a step spanning two nodes is never frozen on either node; one-node steps beside it are time-sliced" {
    local a b
    a=$SLURM_NODE b=${SLURM_NODE}b
    salloc -N2 -n2 -c1 --cosched=gang bash -c "
        srun --overlap -N2 -n2 -c1 '$PROGS/spin' -c 3 -w 120 > wide.out 2> wide.err &
        sleep 0.5
        srun --overlap -N1 -n1 -c1 -w $a '$PROGS/spin' -c 3 -w 120 > narrow.out 2> narrow.err &
        sleep 0.3
        srun --overlap -N1 -n1 -c1 -w $a '$PROGS/spin' -c 3 -w 120 > narrow2.out 2> narrow2.err &
        wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 20 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
    wait_for 20 '[ "$(fstate $a $JOB 1)" != GONE ]'
    wait_for 20 '"$COSCHED" status --socket "$CS_SOCKET" | grep -q "^$JOB.2 "'
    "$COSCHED" status --socket "$CS_SOCKET" --json | tee st.json
    python3 - st.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
by = {}
for s in d["steps"]:
    by.setdefault(s["step"], []).append(s)
assert len(by[0]) == 2, by      # the wide step: one part per node
assert all(s["nodes"] == 2 and s["never_frozen"] for s in by[0]), by
for k in (1, 2):
    assert len(by[k]) == 1 and by[k][0]["nodes"] == 1 and not by[k][0]["never_frozen"], by
EOF
    local wide_frozen=0 narrow_frozen=0 i
    for i in $(seq 40); do
        [ "$(fstate $a "$JOB" 0)" = FROZEN ] && wide_frozen=$((wide_frozen + 1))
        [ "$(fstate $b "$JOB" 0)" = FROZEN ] && wide_frozen=$((wide_frozen + 1))
        [ "$(fstate $a "$JOB" 1)" = FROZEN ] && narrow_frozen=$((narrow_frozen + 1))
        [ "$(fstate $a "$JOB" 2)" = FROZEN ] && narrow_frozen=$((narrow_frozen + 1))
        sleep 0.05
    done
    echo "samples: wide step frozen $wide_frozen times, narrow step frozen $narrow_frozen times"
    [ "$wide_frozen" -eq 0 ]
    [ "$narrow_frozen" -ge 5 ]
    wait "$BG"; BG=
    cat salloc.err wide.err narrow.err
    if grep 'cosched:' wide.err narrow.err narrow2.err; then false; fi
    slurm_node_ok
}
