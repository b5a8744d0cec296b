#!/usr/bin/env bats
# 53-dinuma: DI-NUMA and DIP of paper 002 (lua/policies/{dinuma,dip}.lua,
# lua/cosched/numa_spread.lua).  tests/lua/test_dinuma.lua checks, on fake
# NUMA snapshots, the spread of devils over 2 and 4 nodes, stability under
# oscillating MPKI (migrate_every), migration and its page accounting, DIP's
# isolation of priority jobs, single-node degrade and, on random seeded
# workloads over 1-8 NUMA nodes and 2-256 cores, plan validity, mems and the
# bounds; here we run it, then run both policies for real on spin jobs with
# class hints from a job file (on a one-node machine they degrade to round
# robin on that node and say so once).

load helpers/common
load helpers/policies

@test "dinuma/dip: every test of the Lua script passes" {
    lua_tap_all_ok tests/lua/test_dinuma.lua
}

write_jobs() {
    spin_jobs "name=a class=S" "name=b class=S priority=1" "name=c class=C" "name=d class=N"
}

run_policy() {   # run_policy NAME [OPTS...]
    local name=$1 nodes
    shift
    write_jobs
    policy_run "$name" 4 "" "$@"
    nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
    if [ "$nodes" -le 1 ]; then
        # one NUMA node: the degrade is said exactly once
        [ "$(grep -c "policy $name: one memory domain" <<<"$output")" -eq 1 ]
    fi
}

@test "dinuma: a real run with class hints" {
    requires multicore cosched python3
    run_policy dinuma
    run_policy dinuma --policy-opt migrate_every=2 --policy-opt devil_mpki=5
}

@test "dip: a real run with class hints and a priority job" {
    requires multicore cosched python3
    run_policy dip
    run_policy dip --policy-opt max_load=1 --policy-opt migrate_every=3
}

@test "dinuma/dip: a bad parameter stops cosched before any job starts" {
    requires cosched
    write_jobs
    run "$COSCHED" run --policy dinuma --policy-opt migrate_every=0 --counters none --jobs j.jobs
    [ "$status" -ne 0 ]
    assert_contains "$output" "migrate_every = '0'"
    run "$COSCHED" run --policy dip --policy-opt max_load=-1 --counters none --jobs j.jobs
    [ "$status" -ne 0 ]
    assert_contains "$output" "max_load = '-1'"
}
