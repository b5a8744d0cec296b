#!/usr/bin/env bats
# 51-policies2: the policies of papers 004 (pmugroup: PMU groups, Park, Kim
# and Jeon) and 003 (cachefair: cache-fair, Fedorova, Seltzer and Smith), and
# lua/cosched/regress.lua.  tests/lua/test_policies2.lua checks the groups of
# Table 1's applications (both variants), placement (groups 1 and 2 never in
# one LLC domain in a step), Eq. 2 on a constructed regression, the sampling
# rules, compensation summing to zero, and, on random seeded workloads over
# 2-256 cores and 1-8 LLCs, plan validity and waiting bounds, on fake
# snapshots; here we run it, then run both policies for real on spin jobs.

load helpers/common

setup() {
    LUA=${LUA:-lua5.4}
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    cleanup_cosched
}

@test "policies2: every test of the Lua script passes" {
    lua_tap_all_ok tests/lua/test_policies2.lua
}

# check_trace FILE NJOBS [APART]: no fallback; in every step the running jobs'
# cpus are disjoint; every job ran at least once.  APART, when given, is
# "cpus" (jobs 1 and 2 never on the same LLC; for the synthetic shape
# l3:2 core:1, where cpu 0 is one LLC and cpu 1 the other) or "time" (jobs 1
# and 2 never in the same step).
check_trace() {
    python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
path, njobs, apart = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def cpulist(s):
    out = set()
    for p in filter(None, s.split(",")):
        a, _, b = p.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
ran, steps = set(), 0
for line in open(path):
    o = json.loads(line)
    if o.get("type") != "step":
        continue
    steps += 1
    assert not o["fallback"], "step %d: fallback plan" % o["seq"]
    run = [j for j in o["jobs"] if j["state"] == "run"]
    ids = {j["id"]: cpulist(j["cpus"]) for j in run}
    ran.update(ids)
    for i, a in enumerate(run):
        for b in run[i + 1:]:
            assert not (cpulist(a["cpus"]) & cpulist(b["cpus"])), "step %d: jobs %d and %d overlap: %s / %s" % (
                o["seq"], a["id"], b["id"], a["cpus"], b["cpus"])
    if apart == "time":
        assert not (1 in ids and 2 in ids), "step %d: group-1 job 1 and group-2 job 2 run together" % o["seq"]
    elif apart == "cpus" and 1 in ids and 2 in ids:
        assert not (ids[1] & {0} and ids[2] & {0}) and not (ids[1] & {1} and ids[2] & {1}), \
            "step %d: jobs 1 and 2 share an LLC: %s / %s" % (o["seq"], ids[1], ids[2])
assert steps > 0, "no steps"
assert len(ran) == njobs, "jobs that ran: %s, want %d" % (sorted(ran), njobs)
print("%d steps, %d jobs ran" % (steps, len(ran)))
PY
}

# job 1 is class S (pmugroup group 1) and cache-fair (priority 1), job 2
# class C (group 2), job 3 class N, job 4 no hint
write_jobs() {
    cat > j.jobs <<JOBS
name=a class=S priority=1 -- $PROGS/spin -c 0.3
name=b class=C -- $PROGS/spin -c 0.3
name=c class=N -- $PROGS/spin -c 0.3
name=d -- $PROGS/spin -c 0.3
JOBS
}

run_policy() {   # run_policy NAME APART [OPTS...]
    local name=$1 apart=$2
    shift 2
    write_jobs
    run "$COSCHED" run --policy "$name" --quantum 100ms --counters none -v --trace t.jsonl "$@" --jobs j.jobs
    echo "$output"
    [ "$status" -eq 0 ]
    check_trace t.jsonl 4 "$apart"
    no_cosched_leftovers
}

@test "pmugroup: a real run with class hints, single LLC: groups 1 and 2 apart in time" {
    requires multicore cosched python3
    run_policy pmugroup time --topology 'synthetic:pack:1 l3:1 core:2 pu:1'
    [[ $output == *"groups from class hints"* ]]
    run_policy pmugroup time --topology 'synthetic:pack:1 l3:1 core:2 pu:1' --policy-opt variant=relative
}

@test "pmugroup: a real run with class hints, two LLCs: groups 1 and 2 on different LLCs" {
    requires multicore cosched python3
    run_policy pmugroup cpus --topology 'synthetic:pack:1 l3:2 core:1 pu:1'
    run_policy pmugroup cpus --topology 'synthetic:pack:1 l3:2 core:1 pu:1' --policy-opt variant=relative
}

@test "pmugroup: a real run on this machine's topology" {
    requires multicore cosched python3
    run_policy pmugroup ""
}

@test "cachefair: a real run without counters is fair round robin and says so" {
    requires multicore cosched python3
    run_policy cachefair ""
    [[ $output == *"fair round robin"* ]]
    run_policy cachefair "" --policy-opt fair=a,c
    run_policy cachefair "" --topology 'synthetic:pack:1 l3:2 core:1 pu:1'
}
