#!/usr/bin/env bats
# 40-cleanup: nothing is ever left frozen or confined - normal end, SIGINT and
# SIGTERM, a job that ignores SIGTERM, SIGKILL of cosched (the guardian), a
# failing policy, and cgroups left by an earlier crashed run.

load helpers/common
load helpers/jobs
bats_require_minimum_version 1.5.0

setup() {
    cd "$BATS_TEST_TMPDIR"
    all_cpus
}

teardown() {
    cleanup_cosched
}

start_two() {  # start cosched with two long spin jobs under gang, backend $1
    "$COSCHED" run --control "$1" --policy gang --quantum 300ms --kill-timeout "${KT:-5s}" \
        -- "$PROGS/spin" -t 2 -p a.pid $EXTRA ::: "$PROGS/spin" -t 2 -p b.pid $EXTRA 2> err &
    cs=$!
    echo "$cs" > cosched.pid
    two_pids
}

# kill -9 cosched while one job is held; within a second everything is thawed,
# unconfined and the cgroups are gone; the jobs go on running.
guardian_scenario() {
    local be=$1
    backend_available "$be" || skip "backend $be not available here"
    start_two "$be"
    wait_for 10 job_is_held "$b"
    kill -KILL "$cs"
    wait "$cs" 2>/dev/null || true
    wait_for 1 job_is_free "$b"
    for p in "$a" "$b"; do
        [ -d "/proc/$p" ]
        wait_for 1 'test "$(task_cpus "$p")" = "$ALL"'
        if job_is_held "$p"; then false; fi
    done
    wait_for 1 no_cosched_leftovers
    kill -KILL "$a" "$b"
}

# kill -9 cosched while a job that pinned itself where it started (as GROMACS
# and LLVM's OpenMP runtime do) runs folded: the guardian gives it every CPU
# back, not only its cgroup (Linux >= 6.2 keeps a thread's own mask).
guardian_pinned_scenario() {
    local be=$1
    backend_available "$be" || skip "backend $be not available here"
    requires multicore
    "$COSCHED" run --control "$be" --policy tft --quantum 300ms \
        -- python3 "$HELPERS/pinself.py" hold ::: "$PROGS/spin" -t 2 -p b.pid 2> err &
    cs=$!
    two_pids
    [ "$(cpulist_count "$(cat a.first)")" -lt "$NCPU" ]
    kill -KILL "$cs"
    wait "$cs" 2>/dev/null || true
    wait_for 2 'test "$(task_cpus "$a")" = "$ALL"'
    wait_for 1 no_cosched_leftovers
    kill -KILL "$a" "$b"
}

@test "guardian: cosched killed with SIGKILL (cgroup1)" { guardian_scenario cgroup1; }
@test "guardian: cosched killed with SIGKILL (cgroup2)" { guardian_scenario cgroup2; }
@test "guardian: cosched killed with SIGKILL (signals)" { guardian_scenario signals; }
@test "guardian: a job that pinned itself while folded gets every CPU back (cgroup1)" { guardian_pinned_scenario cgroup1; }
@test "guardian: a job that pinned itself while folded gets every CPU back (cgroup2)" { guardian_pinned_scenario cgroup2; }

signal_scenario() {
    local be=$1 sig=$2
    backend_available "$be" || skip "backend $be not available here"
    start_two "$be"
    wait_for 10 job_is_held "$b"
    kill -"$sig" "$cs"
    st=0
    wait "$cs" || st=$?
    [ "$st" -eq $((128 + $(kill -l "$sig"))) ]
    assert_contains "$(cat err)" "forwarding it to 2 job(s)"
    ! [ -d "/proc/$a" ] || [ "$(proc_state "$a")" = Z ]
    ! [ -d "/proc/$b" ] || [ "$(proc_state "$b")" = Z ]
    no_cosched_leftovers
}

@test "SIGTERM is forwarded to held jobs too (cgroup1)" { signal_scenario cgroup1 TERM; }
@test "SIGINT is forwarded (signals)" { signal_scenario signals INT; }
@test "SIGTERM is forwarded (cgroup2)" { signal_scenario cgroup2 TERM; }

@test "a job that ignores SIGTERM is killed after --kill-timeout" {
    be=signals
    backend_available cgroup1 && be=cgroup1
    KT=300ms EXTRA=-i start_two "$be"
    kill -TERM "$cs"
    st=0
    wait "$cs" || st=$?
    [ "$st" -eq 143 ]
    assert_contains "$(cat err)" "sending SIGKILL"
    no_cosched_leftovers
}

@test "a policy that fails falls back to running every job everywhere" {
    mkdir pol
    cat > pol/flaky.lua <<'LUA'
-- fails from the third epoch on
local n = 0
return { api = 1, name = "flaky", description = "fails on purpose",
  plan = function(snap)
    n = n + 1
    if n >= 3 then error("broken on purpose") end
    return { { jobs = { { id = snap.jobs[1].id, cpus = snap.cpus } } } }
  end }
LUA
    run "$COSCHED" run --policy-path pol --policy flaky --quantum 50ms --trace t.jsonl \
        -- "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -c 0.3
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "flaky.lua:6: broken on purpose"
    assert_contains "$output" "every job runs on every managed cpu"
    grep -q '"fallback":true' t.jsonl
    no_cosched_leftovers
}

# overrun NAME QUANTUM WANT PLAN: a policy NAME whose plan(s) body PLAN
# overruns a limit: cosched says WANT, the spin job runs to its end (exit 0),
# nothing is left
overrun() {
    mkdir pol
    printf 'return { api = 1, name = "%s", description = "x", plan = function(s) %s end }\n' "$1" "$4" > "pol/$1.lua"
    run "$COSCHED" run --policy-path pol --policy "$1" --quantum "$2" -- "$PROGS/spin" -c 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "$3"
    no_cosched_leftovers
}

@test "a policy that loops forever is stopped; jobs keep running" {
    overrun spinny 50ms "plan() exceeded its time limit of 0.05 s of CPU time" 'while true do end'
}

# The time limit of plan() is CPU time of the policy host: a plan() that is
# merely descheduled (here: cosched stopped with SIGSTOP in the middle of it,
# for longer than its limit) is not cut off.  The policy logs before and after
# a loop of ~0.2 s of CPU; the test stops cosched once it has logged "spins",
# and takes the attempt when "spun" is not logged yet (the stop landed inside
# the loop: nothing can be logged while cosched is stopped).
@test "plan()'s time limit is CPU time: a plan() descheduled for longer than its limit is not cut off" {
    local k landed=
    mkdir pol
    cat > pol/stall.lua <<'LUA'
local n = 0
return {
  api = 1, name = "stall", description = "spins in each plan()", shares_cpus = true,
  plan = function(snap)
    n = n + 1
    cosched.log("warn", "plan " .. n .. " spins")
    local x = 0
    for i = 1, 25000000 do x = x + i end
    cosched.log("warn", "plan " .. n .. " spun")
    local step = { jobs = {}, shared = true }
    for _, job in ipairs(snap.jobs) do step.jobs[#step.jobs + 1] = { id = job.id, cpus = snap.cpus } end
    return { step }
  end,
}
LUA
    "$COSCHED" run --policy-path pol --policy stall --quantum 1s -- "$PROGS/spin" -c 6 2> err &
    cs=$!
    echo "$cs" > cosched.pid
    for k in 1 2 3 4 5; do
        wait_for 20 grep -q "plan $k spins" err || break
        kill -STOP "$cs"
        if grep -q "plan $k spun" err; then
            kill -CONT "$cs"
            continue
        fi
        sleep 1.5           # longer than the limit (1 s: the quantum) in wall-clock time
        kill -CONT "$cs"
        landed=$k
        break
    done
    wait "$cs" || { cat err; false; }
    cat err
    [ -n "$landed" ] || { echo "no stop landed inside plan()'s loop in 5 epochs"; false; }
    grep -q "plan $landed spun" err
    if grep -q 'time limit\|did not end\|failed in epoch' err; then false; fi
    no_cosched_leftovers
}

@test "a policy returning an invalid plan is refused with what was wrong" {
    mkdir pol
    cat > pol/overlap.lua <<'LUA'
return { api = 1, name = "overlap", description = "x", plan = function(snap)
  local jobs = {}
  for _, j in ipairs(snap.jobs) do jobs[#jobs + 1] = { id = j.id, cpus = { snap.cpus[1] } } end
  return { { jobs = jobs } }
end }
LUA
    run "$COSCHED" run --policy-path pol --policy overlap --quantum 50ms -- "$PROGS/spin" -c 0.2 ::: "$PROGS/spin" -c 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "overlap.lua"
    assert_contains "$output" "cpu ${ALL%%-*}"
    no_cosched_leftovers
}

@test "cgroups left by a crashed run are reclaimed, with a warning, never reused" {
    requires root
    backend_available cgroup1 || skip "no cgroup v1 here"
    # fake a crashed run: a frozen process in cosched's groups of a dead pid
    dead=$((4000000 + 10#$CS_RUN_ID % 190000))   # this run's own (side by side, tests/README)
    while [ -d /proc/$dead ]; do dead=$((dead + 1)); done
    fz=/sys/fs/cgroup/freezer/cosched/$dead/job1
    cp=/sys/fs/cgroup/cpuset/cosched/$dead/job1
    mkdir -p "$fz" /sys/fs/cgroup/cpuset/cosched
    top=/sys/fs/cgroup/cpuset/cosched
    [ -n "$(cat $top/cpuset.mems)" ] || cat /sys/fs/cgroup/cpuset/cpuset.mems > $top/cpuset.mems
    [ -n "$(cat $top/cpuset.cpus)" ] || cat /sys/fs/cgroup/cpuset/cpuset.cpus > $top/cpuset.cpus
    mkdir -p /sys/fs/cgroup/cpuset/cosched/$dead
    cat /sys/fs/cgroup/cpuset/cpuset.mems > /sys/fs/cgroup/cpuset/cosched/$dead/cpuset.mems
    cat /sys/fs/cgroup/cpuset/cpuset.cpus > /sys/fs/cgroup/cpuset/cosched/$dead/cpuset.cpus
    mkdir -p "$cp"
    cat /sys/fs/cgroup/cpuset/cpuset.mems > "$cp/cpuset.mems"
    echo 0 > "$cp/cpuset.cpus"
    "$PROGS/spin" -p orphan.pid &
    orphan=$!
    wait_for 5 test -s orphan.pid
    echo "$orphan" > "$cp/cgroup.procs"
    echo "$orphan" > "$fz/cgroup.procs"
    echo FROZEN > "$fz/freezer.state"
    wait_for 5 'test "$(cat "$fz/freezer.state")" = FROZEN'
    # side by side (tests/README), another run's cosched may reclaim the groups first: any cosched
    # reclaims the groups of a dead one at its start
    local before=gone
    [ -d "$fz" ] && before=there
    run "$COSCHED" run --control cgroup1 --policy linux -- true
    echo "$output"
    [ "$status" -eq 0 ]
    if [ "$before" = gone ] || { [[ $output != *"cosched/$dead"* ]] && foreign_cosched; }; then
        echo "# reclaimed by another run's cosched"
    else
        assert_contains "$output" "cosched/$dead"
    fi
    [ ! -d "/sys/fs/cgroup/freezer/cosched/$dead" ]
    [ ! -d "/sys/fs/cgroup/cpuset/cosched/$dead" ]
    wait_for 2 'test "$(proc_state "$orphan")" != D'
    [ "$(freezer_state_of "$orphan")" != FROZEN ]
    assert_equal "$(task_cpus "$orphan")" "$ALL"
    kill -KILL "$orphan"
    wait "$orphan" 2>/dev/null || true
}

@test "a job that cannot be started stops the run and cleans up" {
    printf '#!/bin/sh\nexit 0\n' > ok.sh; chmod +x ok.sh
    # the command vanishes between the check and the start: exec fails in the child
    run -127 "$COSCHED" run --policy gang -- ./ok.sh ::: sh -c 'exit 127'

    no_cosched_leftovers
}

@test "a policy that allocates without bound hits the memory cap; jobs keep running" {
    overrun hog 1s "memory limit" 'local t = {} for i = 1, 1e9 do t[i] = {i} end'
}

@test "a policy for another API version, or one that writes to the snapshot, is refused clearly" {
    mkdir pol
    printf 'return { api = 2, name = "future", description = "x", plan = function(s) return {} end }\n' > pol/future.lua
    run "$COSCHED" run --policy-path pol --policy future -- true
    [ "$status" -eq 2 ]
    assert_contains "$output" "written for policy API 2, this cosched supports 1"
    printf 'return { api = 1, name = "writer", description = "x",\n plan = function(s)\n s.epoch = 5\n end }\n' > pol/writer.lua
    run "$COSCHED" run --policy-path pol --policy writer --quantum 50ms -- "$PROGS/spin" -c 0.1
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "writer.lua:3:"
    assert_contains "$output" "read-only"
}

@test "no_cosched_leftovers counts this run's frozen Slurm groups, not another run's (side by side)" {
    requires root cgroup1
    local fz other mine
    fz=$(_cs_v1_mount freezer)
    other=$((10#$CS_RUN_ID == 999999 ? 0 : 10#$CS_RUN_ID + 1))
    other=$fz/slurm_cs$(printf %06d "$other")
    mine=$fz/slurm_cs$CS_RUN_ID
    mkdir -p "$other/job_1" "$mine/job_1"
    echo FROZEN > "$other/job_1/freezer.state"
    echo FROZEN > "$mine/job_1/freezer.state"
    run no_cosched_leftovers
    echo THAWED > "$mine/job_1/freezer.state"
    echo THAWED > "$other/job_1/freezer.state"
    rmdir "$other/job_1" "$other" "$mine/job_1" "$mine"
    echo "$output"
    [ "$status" -eq 1 ]
    assert_contains "$output" "freezer FROZEN: $mine/job_1"
    [[ $output != *"$other"* ]]
    no_cosched_leftovers
}
