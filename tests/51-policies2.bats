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
load helpers/policies

@test "policies2: every test of the Lua script passes" {
    lua_tap_all_ok tests/lua/test_policies2.lua
}

# job 1 is class S (pmugroup group 1) and cache-fair (priority 1), job 2
# class C (group 2), job 3 class N, job 4 no hint
write_jobs() {
    spin_jobs "name=a class=S priority=1" "name=b class=C" "name=c class=N" "name=d"
}

run_policy() {   # run_policy NAME APART [OPTS...]
    local name=$1 apart=$2
    shift 2
    write_jobs
    # APART: "" (disjoint cpus), "time" (jobs 1 and 2 never in one step), "cpus"
    # (never on one LLC of the shape l3:2 core:1)
    policy_run "$name" 4 "${apart/cpus/llc}" -v "$@"
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
