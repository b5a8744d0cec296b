#!/usr/bin/env bats
# 30-mechanisms: every control backend this machine has, on real processes.
# The same scenario runs under cgroup1, cgroup2 and signals; each test skips
# with the reason when the backend is not available here.

load helpers/common
load helpers/jobs
load helpers/tmpdir

setup() {
    cd "$BATS_TEST_TMPDIR"
    all_cpus
}

# Gang under backend $1: one job held while the other runs, both ways round,
# with the kernel's view of the mechanism; CPU shares from the trace.
gang_scenario() {
    local be=$1
    backend_available "$be" || skip "backend $be not available here (needs root and its cgroup mount)"
    "$COSCHED" run --control "$be" --policy gang --quantum 200ms --trace t.jsonl \
        -- "$PROGS/spin" -t 2 -c 3.0 -p a.pid ::: "$PROGS/spin" -t 2 -c 3.0 -p b.pid 2> err &
    cs=$!
    two_pids
    # the kernel shows a held while b runs, then the other way round; both
    # read in one sample: on a loaded machine a 200 ms quantum can end
    # between a read that found one held and the read of the other.  Each
    # job needs several quanta of CPU (3 s of it), so that on a loaded
    # machine a is still there when the second look starts
    wait_for 10 'job_is_held "$a" && ! job_is_held "$b"'
    wait_for 10 'job_is_held "$b" && ! job_is_held "$a"'
    case $be in
    cgroup1)
        wait_for 5 'test "$(freezer_state_of "$b")" = FROZEN'
        grep -q "cosched/$cs/job" "/proc/$a/cgroup" ;;
    cgroup2)
        grep -q "^0::.*cosched/$cs/job" "/proc/$a/cgroup" ;;
    signals)
        wait_for 5 all_threads_state "$b" T ;;
    esac
    wait "$cs"
    cat err
    assert_contains "$(cat err)" "control $be"
    python3 "$HELPERS/trace_check.py" t.jsonl gang "$ALL"
    no_cosched_leftovers
    # CPU shares on a run the test does not poll, against what the rest of
    # the machine left to it
    stat_mark s.stat
    run "$COSCHED" run --control "$be" --policy gang --quantum 200ms --trace s.jsonl \
        -- "$PROGS/spin" -t 2 -c 0.8 ::: "$PROGS/spin" -t 2 -c 0.8
    stat_mark s.stat
    [ "$status" -eq 0 ]
    python3 "$HELPERS/trace_check.py" s.jsonl shares 0.35 s.stat
}

tft_scenario() {
    local be=$1
    backend_available "$be" || skip "backend $be not available here (needs root and its cgroup mount)"
    requires multicore
    "$COSCHED" run --control "$be" --policy tft --quantum 200ms --trace t.jsonl \
        -- "$PROGS/spin" -t 2 -c 1.0 -p a.pid ::: "$PROGS/spin" -t 2 -c 1.0 -p b.pid 2> err &
    cs=$!
    two_pids
    ca=$(task_cpus "$a") cb=$(task_cpus "$b")
    [ "$(echo "$ca" | wc -l)" -eq 1 ]
    [ "$(echo "$cb" | wc -l)" -eq 1 ]
    [ "$ca" != "$cb" ]
    if [ "$be" = cgroup1 ]; then
        cg=$(awk -F: '$2 == "cpuset" {print $3}' "/proc/$a/cgroup")
        check_cgroup_value "/sys/fs/cgroup/cpuset$cg/cpuset.cpus" "$ca"
    fi
    wait "$cs"
    python3 "$HELPERS/trace_check.py" t.jsonl tft "$ALL"
    no_cosched_leftovers
}

# A job that set its own affinity to the CPUs it started on, as GROMACS and
# LLVM's OpenMP runtime do while they probe the machine: started folded
# beside another job, it must get every CPU once it runs alone.  Since Linux
# 6.2 a cpuset that grows keeps such a task on its own mask within the new
# set (the kernel's "user requested" mask), so the job would run on its
# starting half for the rest of its life.  The job reads its affinity from
# the kernel itself (sched_getaffinity) and says whether it ever widened.
# (Before Linux 6.2 the kernel widens such a thread itself; the test then
# checks cosched's bindings rule does not keep it narrow.)
widen_scenario() {
    local be=$1
    backend_available "$be" || skip "backend $be not available here (needs root and its cgroup mount)"
    requires multicore
    run "$COSCHED" run --control "$be" --policy tft --quantum 200ms \
        -- python3 "$HELPERS/pinself.py" widen ::: "$PROGS/spin" -t 2 -c 1.0
    echo "$output"
    # it started folded: one half, not every CPU
    [ "$(cpulist_count "$(cat a.first)")" -lt "$NCPU" ]
    [ "$status" -eq 0 ]
    assert_contains "$output" "widened to"
    no_cosched_leftovers
}

@test "cgroup1: gang freezes exactly one job at a time" { gang_scenario cgroup1; }
@test "cgroup1: tft cpusets are the halves" { tft_scenario cgroup1; }
@test "cgroup2: gang freezes exactly one job at a time" { gang_scenario cgroup2; }
@test "cgroup2: tft halves (cpuset or affinity fallback)" { tft_scenario cgroup2; }
@test "signals: gang stops exactly one job at a time" { gang_scenario signals; }
@test "signals: tft affinity halves" { tft_scenario signals; }
@test "cgroup1: a job that pinned itself where it started gets every CPU when it runs alone" { widen_scenario cgroup1; }
@test "cgroup2: a job that pinned itself where it started gets every CPU when it runs alone" { widen_scenario cgroup2; }

# A thread born between the look at a job's threads and the apply of a move
# that grows its cpuset (binds.c), put there deterministically by
# tests/progs/binds_race, which moves the job in the backends' order.  Its
# leader has a requested mask (libomp, GROMACS): Linux >= 6.2 copies it to
# the new thread and keeps it when the cpuset grows.
@test "cgroup1: a thread born while its job's cpuset grows gets the grown set (the second look)" {
    requires root cgroup1 multicore
    [ -x "$PROGS/binds_race" ] || skip "$PROGS/binds_race is not built (make check builds it)"
    d="$(_cs_v1_mount cpuset)/cs-binds-race-$$"
    local re='^grown ([^ ]+) leader ([^ ]+) thread ([^ ]+)$'
    run "$PROGS/binds_race" "$d" --no-again
    echo "without the second look: $output"
    [[ "$output" =~ $re ]]
    if _cs_kernel_at_least 6 2; then
        # the window is real here: the leader has the grown set, the thread
        # born in the window only the first CPU
        [ "$status" -eq 1 ]
        [ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[1]}" ]
        [ "${BASH_REMATCH[3]}" != "${BASH_REMATCH[1]}" ]
    fi
    run "$PROGS/binds_race" "$d"
    echo "with it: $output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ $re ]]
    [ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[1]}" ]
    [ "${BASH_REMATCH[3]}" = "${BASH_REMATCH[1]}" ]
    [ ! -e "$d" ]
}

@test "auto names the backend it chose and why" {
    run "$COSCHED" run --policy linux -- true
    [ "$status" -eq 0 ]
    assert_contains "$output" "control: "
}

@test "cgroup2 without the cpuset controller says what it falls back to" {
    backend_available cgroup2 || skip "no cgroup2 mount here"
    m=$(cgroup2_mount)
    grep -qw cpuset "$m/cgroup.controllers" && skip "cgroup2 here has the cpuset controller"
    run "$COSCHED" run --control cgroup2 --policy linux -- true
    [ "$status" -eq 0 ]
    assert_contains "$output" "sched_setaffinity"
}

@test "a non-root user cannot use cgroup1 and is told which backend works" {
    requires root
    id nobody >/dev/null 2>&1 || skip "no user nobody"
    [ -d /sys/fs/cgroup/freezer ] || skip "no cgroup v1 freezer"
    chmod 755 "$BATS_TEST_TMPDIR"
    run runuser -u nobody -- "$COSCHED" run --control cgroup1 --policy linux -- true
    echo "$output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "signals"
    run runuser -u nobody -- "$COSCHED" run --policy gang --quantum 50ms -- true ::: true
    echo "$output"
    [ "$status" -eq 0 ]
}
