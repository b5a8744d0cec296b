#!/usr/bin/env bats
# 52-numa: the NUMA policies of paper 000 (Majo and Gross): maxlocal (Alg. 2)
# and nmass (Alg. 1-3), lua/cosched/numa.lua.  tests/lua/test_numa.lua checks
# the mappings of the paper's Table 3 allocation maps, the 60-MPKI threshold,
# the 20 % remap rule, the no-counter degrade and, on random seeded workloads
# over 2-8 NUMA nodes and 2-256 cores, plan validity, placement and time-share
# fairness, on fake snapshots; here we run it, then run both policies for
# real on this machine and on a synthetic two-node topology.

load helpers/common
load helpers/policies

@test "numa: every test of the Lua script passes" {
    lua_tap_all_ok tests/lua/test_numa.lua
}

run_policy() {   # run_policy NAME NJOBS [OPTS...]: N spin jobs, the last one without threads= (all cores)
    local name=$1 n=$2 i jobs=()
    shift 2
    for ((i = 1; i < n; i++)); do
        jobs+=("name=j$i threads=1")
    done
    spin_jobs "${jobs[@]}" "name=j$n"
    policy_run "$name" "$n" "" -v "$@"
}

@test "maxlocal: real runs on this machine and on two synthetic NUMA nodes" {
    requires multicore cosched python3
    run_policy maxlocal 3
    run_policy maxlocal 4
    run "$COSCHED" topology --topology 'synthetic:pack:2 numa:1 core:1 pu:1'
    assert_contains "$output" "NUMA node 1"
    run_policy maxlocal 3 --topology 'synthetic:pack:2 numa:1 core:1 pu:1'
    run_policy maxlocal 4 --topology 'synthetic:pack:2 numa:1 core:1 pu:1' --policy-opt epoch=0.2
}

@test "nmass: real runs on this machine and on two synthetic NUMA nodes; without counters it says it is maximum-local" {
    requires multicore cosched python3
    run_policy nmass 3
    [[ $output == *"running as maximum-local"* ]]
    run_policy nmass 4
    run_policy nmass 3 --topology 'synthetic:pack:2 numa:1 core:1 pu:1'
    [[ $output == *"running as maximum-local"* ]]
    run_policy nmass 4 --topology 'synthetic:pack:2 numa:1 core:1 pu:1' --policy-opt interconnect_mpki=30
}

@test "nmass: a bad parameter stops cosched before any job starts" {
    requires cosched
    run "$COSCHED" run --policy nmass --policy-opt interconnect_mpki=0 -- touch started
    echo "$output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "interconnect_mpki"
    [ ! -e started ]
}
