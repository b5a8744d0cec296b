#!/usr/bin/env bats
# tests/vm/20-cgroup2: the cgroup2 backend on a real cgroup v2 cpuset
# controller - runs inside the VM of tests/vm/vmrun (8 CPUs, 2 sockets,
# 2 NUMA nodes, pure cgroup2, cpuset and cpu enabled in the root's
# subtree_control), never on the host (every test skips there).
#
# What is asserted comes from the kernel, not from cosched: the job's
# cgroup (/proc/PID/cgroup), its cgroup.freeze and cgroup.events, its
# cpuset.cpus and cpuset.cpus.effective, and each thread's
# Cpus_allowed_list in /proc/PID/task/*/status.  The tft and flca tests
# fail when cosched uses the affinity fallback instead of cpuset.cpus (the
# job's cgroup then has no cpuset.cpus file): checked by forcing the
# fallback in cs_cgroup2_cpuset_usable.

load ../helpers/common
load ../helpers/jobs

setup() {
    in_vm
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    cleanup_cosched
}

# in_vm: skip unless this is the test VM (pure cgroup2 with cpuset delegated).
in_vm() {
    [ "${COSCHED_VM:-}" = 1 ] || skip "runs in the test VM only (make check-vm)"
    grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control ||
        { echo "VM: cpuset is not in /sys/fs/cgroup/cgroup.subtree_control ($(cat /sys/fs/cgroup/cgroup.subtree_control))" >&2; return 1; }
}

# job_cg PID: the cgroup2 directory of PID
job_cg() {
    local p
    p=$(awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup") || return 1
    echo "/sys/fs/cgroup${p%/}"
}

# confined_by_cpuset PID WANT: PID sits in a cosched job cgroup whose
# cpuset.cpus is WANT, cpuset.cpus.effective is WANT, and every thread's
# Cpus_allowed_list is WANT.
confined_by_cpuset() {
    local pid=$1 want=$2 cg
    cg=$(job_cg "$pid")
    [[ $cg == */cosched/*/job* ]] || { echo "pid $pid: cgroup $cg is not a cosched job cgroup" >&2; return 1; }
    [ -f "$cg/cpuset.cpus" ] || { echo "pid $pid: $cg has no cpuset.cpus: the cpuset controller is not on (affinity fallback?)" >&2; return 1; }
    check_cgroup_value "$cg/cpuset.cpus" "$want" || return 1
    check_cgroup_value "$cg/cpuset.cpus.effective" "$want" || return 1
    assert_equal "$(task_cpus "$pid")" "$want" "Cpus_allowed_list of every thread of $pid"
}

# frozen_by_cgroup PID: PID's cgroup has cgroup.freeze 1 and cgroup.events frozen 1
frozen_by_cgroup() {
    local cg
    cg=$(job_cg "$1")
    [[ $cg == */cosched/*/job* ]] || { echo "pid $1: cgroup $cg is not a cosched job cgroup" >&2; return 1; }
    check_cgroup_value "$cg/cgroup.freeze" 1 || return 1
    grep -qx 'frozen 1' "$cg/cgroup.events" || { echo "$cg/cgroup.events: want 'frozen 1', got: $(tr '\n' ' ' < "$cg/cgroup.events")" >&2; return 1; }
}

running_free() {       # running_free PID: not frozen, cgroup.events frozen 0
    local cg
    cg=$(job_cg "$1")
    grep -qx 'frozen 0' "$cg/cgroup.events" || { echo "$cg/cgroup.events: want 'frozen 0', got: $(tr '\n' ' ' < "$cg/cgroup.events")" >&2; return 1; }
}

# start_two POLICY THREADS: cosched with two spin jobs of THREADS threads that
# spin until stopped, at nice 19.  Under emulation 8 vCPUs share the host's
# cores: a job that ends by itself may end before the slow test shell looks,
# and unniced spinners starve that shell.  Pids in $cs $a $b.
start_two() {
    "$COSCHED" run --policy "$1" --quantum 1s \
        -- nice -n 19 "$PROGS/spin" -t "$2" -w 300 -p a.pid ::: nice -n 19 "$PROGS/spin" -t "$2" -w 300 -p b.pid 2> err &
    cs=$!
    echo "$cs" > cosched.pid
    wait_for 30 test -s a.pid
    wait_for 30 test -s b.pid
    a=$(cat a.pid) b=$(cat b.pid)
}

# stop_cosched: SIGTERM to cosched (forwarded to its jobs), wait for it; it
# says which control it used
stop_cosched() {
    kill -TERM "$cs"
    wait "$cs" || true
    assert_contains "$(cat err)" "control cgroup2"
}

@test "vm: pure cgroup2 with the cpuset controller, 8 CPUs, 2 NUMA nodes" {
    run awk '$3 == "cgroup" || $3 == "cgroup2" { print $3, $2 }' /proc/mounts
    assert_equal "$output" "cgroup2 /sys/fs/cgroup" "cgroup mounts"
    grep -qw cpuset /sys/fs/cgroup/cgroup.controllers
    assert_equal "$(nproc)" 8 "nproc"
    assert_equal "$(cat /sys/devices/system/node/online)" 0-1 "online NUMA nodes"
    assert_equal "$(cat /sys/devices/system/node/node1/cpulist)" 4-7 "node1 cpulist"
}

@test "cgroup2 auto: chooses cgroup.freeze and the cpuset controller, says so" {
    run "$COSCHED" run --policy gang --quantum 200ms -- "$PROGS/spin" -c 0.2
    [ "$status" -eq 0 ]
    assert_contains "$output" "control: cgroup2 (cgroup.freeze and the cpuset controller are usable)"
    if [[ $output == *sched_setaffinity* ]]; then echo "affinity fallback mentioned: $output" >&2; false; fi
    no_cosched_leftovers
}

# Sampled, not stepped: the test shell is slower than a quantum here.  Once
# the rotation has started, no sample sees both jobs running (gang freezes
# the leaving job before it thaws the next, so both frozen is a switch in
# progress); when one is frozen (cgroup.freeze 1, cgroup.events frozen 1)
# the other runs on all 8 CPUs by its cpuset; over the samples each job was
# the frozen one at least once.
@test "cgroup2 gang: one job frozen by cgroup.freeze at a time, both ways round, on all 8 CPUs" {
    start_two gang 1
    seen_a=0 seen_b=0 n=0
    while [ $n -lt 30 ] && { [ $seen_a -eq 0 ] || [ $seen_b -eq 0 ]; }; do
        n=$((n + 1))
        fa=$(awk '$1 == "frozen" { print $2 }' "$(job_cg "$a")/cgroup.events")
        fb=$(awk '$1 == "frozen" { print $2 }' "$(job_cg "$b")/cgroup.events")
        case $fa$fb in
        10) frozen_by_cgroup "$a" && confined_by_cpuset "$b" 0-7 && seen_a=1 ;;
        01) frozen_by_cgroup "$b" && confined_by_cpuset "$a" 0-7 && seen_b=1 ;;
        11) ;;    # a switch in progress (or the start: jobs start held)
        00) if [ $((seen_a + seen_b)) -gt 0 ]; then
                echo "sample $n: both jobs running at once under gang" >&2; cat err >&2; false
            fi ;;
        esac
        sleep 0.3
    done
    [ $seen_a -eq 1 ] && [ $seen_b -eq 1 ] ||
        { echo "after $n samples: a seen frozen: $seen_a, b seen frozen: $seen_b (want both)" >&2; cat err >&2; false; }
    [ "$(job_cg "$a")" != "$(job_cg "$b")" ]
    stop_cosched
    no_cosched_leftovers
}

@test "cgroup2 tft: each job confined to one socket by cpuset.cpus (0-3 and 4-7)" {
    start_two tft 2
    wait_for 20 'confined_by_cpuset "$a" 0-3 || confined_by_cpuset "$a" 4-7'
    ca=$(cat "$(job_cg "$a")/cpuset.cpus")
    [ "$ca" = 0-3 ] && want=4-7 || want=0-3
    wait_for 20 confined_by_cpuset "$b" "$want"
    running_free "$a"
    running_free "$b"
    stop_cosched
    no_cosched_leftovers
}

# The jobs say threads=4 (what flca plans with: 16 threads for 8 CPUs) but
# spin 2 threads each, so that the emulated VM stays responsive.
@test "cgroup2 flca: four 4-thread jobs on 8 CPUs: frozen and confined by the kernel, never both, never outside the cpuset" {
    cat > j.jobs <<JOBS
name=s1 class=S threads=4 -- nice -n 19 $PROGS/spin -t 2 -w 300 -p s1.pid
name=s2 class=S threads=4 -- nice -n 19 $PROGS/spin -t 2 -w 300 -p s2.pid
name=c1 class=C threads=4 -- nice -n 19 $PROGS/spin -t 2 -w 300 -p c1.pid
name=n1 class=N threads=4 -- nice -n 19 $PROGS/spin -t 2 -w 300 -p n1.pid
JOBS
    "$COSCHED" run --policy flca --quantum 1s --counters none --trace t.jsonl --jobs j.jobs 2> err &
    cs=$!
    echo "$cs" > cosched.pid
    for j in s1 s2 c1 n1; do wait_for 60 test -s $j.pid; done
    frozen=0 confined=0 samples=0
    # sample the kernel's view while the run lasts: a job is either frozen
    # (cgroup.events) or runs where its cpuset says, and its threads agree
    while [ $samples -lt 10 ]; do
        for j in s1 s2 c1 n1; do
            p=$(cat $j.pid)
            cg=$(job_cg "$p")
            [ -d "$cg" ] && [[ $cg == */cosched/*/job* ]] || continue
            [ -f "$cg/cpuset.cpus" ] || { echo "$j: $cg has no cpuset.cpus (affinity fallback?)" >&2; false; }
            if grep -qx 'frozen 1' "$cg/cgroup.events"; then
                frozen=$((frozen + 1))
            else
                # the plan may change while we read: the kernel must agree within 5 s
                wait_for 5 'test "$(task_cpus "$p")" = "$(cat "$cg/cpuset.cpus.effective")" || grep -qx "frozen 1" "$cg/cgroup.events"' ||
                    { echo "$j: threads' Cpus_allowed_list $(task_cpus "$p" | tr '\n' ' ') vs $cg/cpuset.cpus.effective $(cat "$cg/cpuset.cpus.effective")" >&2; false; }
                [ "$(cat "$cg/cpuset.cpus.effective")" = 0-7 ] || confined=$((confined + 1))
            fi
        done
        samples=$((samples + 1))
        sleep 0.5
    done
    stop_cosched
    echo "samples $samples: $frozen frozen, $confined confined (job observations)"
    [ "$frozen" -gt 0 ] || { echo "flca never froze a job (4 x 4 threads on 8 CPUs)" >&2; false; }
    [ "$confined" -gt 0 ] || { echo "flca never confined a running job to fewer than 8 CPUs" >&2; false; }
    no_cosched_leftovers
}

@test "cgroup2 guardian: cosched killed with SIGKILL: frozen job thawed, confined jobs get all CPUs, no cgroup left" {
    # gang: b frozen
    start_two gang 1
    wait_for 30 frozen_by_cgroup "$b" || { cat err >&2; false; }
    kill -KILL "$cs"
    wait "$cs" 2>/dev/null || true
    wait_for 5 job_is_free "$b"
    for p in "$a" "$b"; do
        pid_alive "$p"
        wait_for 5 'test "$(task_cpus "$p")" = 0-7'
        assert_equal "$(job_cg "$p")" /sys/fs/cgroup "cgroup of $p after the guardian"
    done
    wait_for 5 no_cosched_leftovers
    kill -KILL "$a" "$b"
    rm -f a.pid b.pid
    # tft: both confined to a socket by cpuset.cpus
    start_two tft 2
    wait_for 20 'confined_by_cpuset "$a" 0-3 || confined_by_cpuset "$a" 4-7'
    kill -KILL "$cs"
    wait "$cs" 2>/dev/null || true
    for p in "$a" "$b"; do
        pid_alive "$p"
        wait_for 5 'test "$(task_cpus "$p")" = 0-7'
        assert_equal "$(job_cg "$p")" /sys/fs/cgroup "cgroup of $p after the guardian"
        if job_is_held "$p"; then echo "$p still held" >&2; false; fi
    done
    wait_for 5 no_cosched_leftovers
    kill -KILL "$a" "$b"
}
