# policies.bash - the set-up shared by the policy tiers 50-53
# (`load helpers/policies` after helpers/common): each runs its Lua unit
# script, then runs policies for real on spin jobs, in $BATS_TEST_TMPDIR.

load helpers/tmpdir

# spin_jobs JOB...: write j.jobs, one 0.3 s spin job per JOB, JOB being the
# job file's words before the command ("name=a class=S priority=1").
spin_jobs() {
    local j
    : > j.jobs
    for j in "$@"; do
        echo "$j -- $PROGS/spin -c 0.3" >> j.jobs
    done
}

# policy_run NAME NJOBS APART [OPTS...]: cosched run --policy NAME over j.jobs
# (100 ms quanta, no counters, the trace in t.jsonl, then OPTS); it must exit
# 0, the trace must show the NJOBS jobs apart (trace_check.py apart NJOBS
# APART: "" disjoint cpus, "pairs", "time" or "llc") and nothing be left.
policy_run() {
    local name=$1 n=$2 apart=$3
    shift 3
    run "$COSCHED" run --policy "$name" --quantum 100ms --counters none --trace t.jsonl "$@" --jobs j.jobs
    echo "$output"
    [ "$status" -eq 0 ]
    python3 "$COSCHED_SRCDIR/tests/helpers/trace_check.py" t.jsonl apart "$n" "$apart"
    no_cosched_leftovers
}
