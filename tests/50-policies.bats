#!/usr/bin/env bats
# 50-policies: the contention-aware policies of paper 001 (lbb, llcmrb, flbb,
# fllcmrb, lca, fop, flca; lua/cosched/pairing.lua, lua/cosched/ageing.lua).
# tests/lua/test_policies.lua checks pairings, ages, K selection and, on
# random seeded workloads over 2-256 cores and 1-8 LLCs, plan validity and
# starvation bounds, on fake snapshots; here we run it, then run every policy
# for real on spin jobs with class hints from a job file.

load helpers/common
load helpers/policies

@test "policies: every test of the Lua script passes" {
    lua_tap_all_ok tests/lua/test_policies.lua
}

@test "never-frozen jobs: every time-slicing policy plans the others on the cores they do not keep (Lua script)" {
    lua_tap_all_ok tests/lua/test_never_frozen.lua
}

# run_policies NAME FOLDED: NAME on four jobs with class hints S, C, N and
# none, characterized, then with the hints alone (characterize=no); folded
# policies never share cpus, the others pair two jobs on one list
run_policies() {
    local name=$1 apart
    [ "$2" = 1 ] || apart=pairs
    spin_jobs "name=a class=S" "name=b class=C" "name=c class=N" "name=d"
    policy_run "$name" 4 "$apart"
    policy_run "$name" 4 "$apart" --policy-opt characterize=no
}

@test "lbb: a real run with class hints" {
    requires multicore cosched python3
    run_policies lbb 0
}

@test "llcmrb: a real run with class hints" {
    requires multicore cosched python3
    run_policies llcmrb 0
}

@test "flbb: a real run with class hints" {
    requires multicore cosched python3
    run_policies flbb 1
}

@test "fllcmrb: a real run with class hints" {
    requires multicore cosched python3
    run_policies fllcmrb 1
}

@test "lca: a real run with class hints" {
    requires multicore cosched python3
    run_policies lca 0
}

@test "fop: a real run with class hints" {
    requires multicore cosched python3
    run_policies fop 1
}

@test "flca: a real run with class hints" {
    requires multicore cosched python3
    run_policies flca 1
}

# The host reads a cpu table handed to several jobs of one plan only once
# (launcher/policy/plan.c, read_cpus): the checks must still apply to every job.
@test "plan validation: one cpu table given to two jobs is an overlap unless shared" {
    requires multicore cosched
    mkdir pol
    cat > pol/same.lua <<'LUA'
return { api = 1, name = "same", description = "x",
  params = { shared = { default = "no", help = "x" } },
  plan = function(snap)
    local jobs, c = {}, { snap.cpus[1], snap.cpus[2] }
    for _, j in ipairs(snap.jobs) do jobs[#jobs + 1] = { id = j.id, cpus = c } end
    return { { jobs = jobs, shared = snap.params.shared == "yes" } }
  end }
LUA
    run "$COSCHED" run --policy-path pol --policy same --quantum 50ms --trace t.jsonl -- "$PROGS/spin" -c 0.2 ::: "$PROGS/spin" -c 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "is also given to job 1"
    grep -q '"fallback":true' t.jsonl
    run "$COSCHED" run --policy-path pol --policy same --policy-opt shared=yes --quantum 50ms --trace t2.jsonl -- "$PROGS/spin" -c 0.2 ::: "$PROGS/spin" -c 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    if grep -q '"fallback":true' t2.jsonl; then false; fi
    # a table with an unmanaged cpu is refused for the first job that has it
    cat > pol/bad.lua <<'LUA'
return { api = 1, name = "bad", description = "x", plan = function(snap)
    local jobs, c = {}, { snap.cpus[1], 4096 }
    for _, j in ipairs(snap.jobs) do jobs[#jobs + 1] = { id = j.id, cpus = c } end
    return { { jobs = jobs, shared = true } }
  end }
LUA
    run "$COSCHED" run --policy-path pol --policy bad --quantum 50ms -- "$PROGS/spin" -c 0.2 ::: "$PROGS/spin" -c 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "job 1: cpu 4096 is not managed"
    no_cosched_leftovers
}
