#!/usr/bin/env bats
# 61-serve: `cosched serve` (the node engine) and `cosched status`, for real,
# without Slurm: steps are directories of a fake tree in Slurm's cgroup/v2
# layout inside the real cgroup2 mount (helpers/fakeslurm.bash), tasks are
# real processes in them, registrations are protocol lines sent as root (or
# as nobody) by tests/helpers/cs_client.py.  Every assertion is on what the
# kernel reports - cgroup.events "frozen", /proc/PID/status Cpus_allowed_list,
# /proc/PID/task/*/stat states - or on what a client receives; the engine's
# own claims are checked against the kernel, never trusted alone.

load helpers/common
load helpers/fakeslurm
bats_require_minimum_version 1.5.0

setup() {
    fake_test_setup
}

teardown() {
    fake_teardown
}

# ------------------------------------------------------------------ helpers

# thread_states PID: the distinct state letters of PID's threads ("R", "S", "RS").
thread_states() {
    local f
    for f in /proc/"$1"/task/*/stat; do
        _cs_stat "$f" && echo "${_CS_F[0]}"
    done | sort -u | tr -d '\n'
}

# look J1 S1 PID1 J2 S2 PID2: one consistent look at two steps:
# "frozenA frozenB statesA statesB", taken between two equal readings of both
# cgroup.events (retried when a switch happened during the look).
# One python process: the readings are microseconds apart, so a switch inside
# a look is rare; a step being frozen (cgroup.freeze 1, not yet "frozen 1" in
# cgroup.events) is not looked at; "-" for a process without threads.
look() {
    python3 - "$(step_dir "$1" "$2" user)" "$3" "$(step_dir "$4" "$5" user)" "$6" <<'PY'
import glob, sys, time
def frozen(d):
    # "1" frozen, "0" running, "x" on the way (asked, not yet done)
    asked = open(d + "/cgroup.freeze").read().strip()
    for line in open(d + "/cgroup.events"):
        if line.startswith("frozen "):
            return line.split()[1] if line.split()[1] == asked else "x"
def states(pid):
    s = set()
    for f in glob.glob("/proc/%s/task/*/stat" % pid):
        try:
            s.add(open(f).read().rsplit(") ", 1)[1][0])
        except (OSError, IndexError):
            pass
    return "".join(sorted(s)) or "-"
da, pa, db, pb = sys.argv[1:5]
# a loaded machine can switch while we read: try again, a while
for _ in range(500):
    a1, b1 = frozen(da), frozen(db)
    sa, sb = states(pa), states(pb)
    if "x" not in (a1, b1) and (a1, b1) == (frozen(da), frozen(db)):
        print(a1, b1, sa, sb)
        sys.exit(0)
    time.sleep(0.002)
sys.exit("look: no consistent look at %s and %s in 500 tries" % (da, db))
PY
}

# settled J S: 1 (frozen), 0 (running) or x (asked to freeze, not frozen yet:
# cgroup.freeze and the "frozen" of cgroup.events differ)
settled() {
    local asked
    asked=$(cat "$(step_dir "$1" "$2" user)/cgroup.freeze")
    [ "$asked" = "$(step_frozen "$1" "$2")" ] && echo "$asked" || echo x
}

# registered J S PID [K=V...]: register, require "OK id=N policy=...", ID=N
registered() {
    local out
    out=$(cs_register "$@") || { echo "register $1.$2 pid $3: no reply" >&2; return 1; }
    [[ $out =~ ^OK\ id=([0-9]+)\ policy=[a-z0-9_-]+$ ]] || {
        echo "register $1.$2 pid $3: want 'OK id=N policy=NAME', got: $out" >&2
        return 1
    }
    ID=${BASH_REMATCH[1]}
}

# restored J S PID: the step is thawed, every thread of PID may run on every
# cpu, and PID still spins (every thread runnable)
restored() {
    local f c s
    f=$(step_frozen "$1" "$2") c=$(task_cpus "$3") s=$(thread_states "$3")
    [ "$f" = 0 ] && [ "$c" = "$ALL" ] && [ "$s" = R ] && return 0
    echo "step $1.$2 (pid $3): frozen=$f cpus=$c thread states=$s (want frozen=0 cpus=$ALL states=R)" >&2
    return 1
}

# our_cosched_processes: live cosched processes of this test (engine, guardian, daemon)
our_cosched_processes() {
    local p comm
    while read -r p _ _ comm; do
        [ "$(_cs_env_of "$p" BATS_TEST_TMPDIR)" = "$BATS_TEST_TMPDIR" ] && echo "$p $comm"
    done < <(_cs_ps | awk '$4 ~ /^cosched/')
    return 0
}

no_cosched_process() {
    local left
    left=$(our_cosched_processes)
    [ -z "$left" ] && return 0
    echo "cosched processes still alive: $left" >&2
    return 1
}

slurmstepd_thawed() {  # J S: the step's slurm/ group (slurmstepd) is not frozen
    local f
    f=$(awk '$1 == "frozen" { print $2 }' "$(step_dir "$1" "$2" slurm)/cgroup.events")
    [ "$f" = 0 ] || { echo "step $1.$2: slurm/ (slurmstepd) frozen=$f" >&2; return 1; }
}

two_steps() {  # steps 7.0 (pid $a) and 8.0 (pid $b), registered with serve ARGS
    fake_steps 7:a 8:b
    serve_start "$@"
    registered 7 0 "$a"
    registered 8 0 "$b"
}

# gang_turns: sample steps 7.0 and 8.0 under gang until each was seen running
# alone and frozen 3 times (and 20 looks at least): never both running, a
# frozen step's threads are all stopped, a running step's threads all run,
# slurmstepd is never frozen.
gang_turns() {
    local A B SA SB n=0 ra=0 fa=0 rb=0 fb=0 deadline fallbacks
    local said='every job runs on every managed cpu this epoch'
    fallbacks=$(grep -c "$said" "$BATS_TEST_TMPDIR/engine.log" || true)
    deadline=$(($(_cs_now_us) + 30000000))
    while [ $ra -lt 3 ] || [ $fa -lt 3 ] || [ $rb -lt 3 ] || [ $fb -lt 3 ] || [ $n -lt 20 ]; do
        [ "$(_cs_now_us)" -lt "$deadline" ] || {
            echo "in 30 s: 7.0 ran alone $ra, was frozen $fa; 8.0 ran alone $rb, was frozen $fb times ($n looks)" >&2
            return 1
        }
        A='' B='' SA='' SB=''
        read -r A B SA SB < <(look 7 0 "$a" 8 0 "$b") || true
        [ -n "$SB" ] || { echo "look $n failed" >&2; return 1; }
        n=$((n + 1))
        slurmstepd_thawed 7 0
        slurmstepd_thawed 8 0
        case $A$B in
        00) # a policy that failed (its plan() over its CPU-time limit on a loaded machine) gets
            # the fallback plan: every step runs - the engine says so in its log
            if [ "$(grep -c "$said" "$BATS_TEST_TMPDIR/engine.log" || true)" -gt "$fallbacks" ]; then
                fallbacks=$(grep -c "$said" "$BATS_TEST_TMPDIR/engine.log" || true)
                continue
            fi
            # side by side, another run's engine thawed our frozen step at its start; ours
            # freezes it again at its next switch
            other_runs && continue
            echo "look $n: steps 7.0 and 8.0 both unfrozen under gang; the engine's log:" >&2
            tail -n 20 "$BATS_TEST_TMPDIR/engine.log" >&2
            return 1 ;;
        01) ra=$((ra + 1)) fb=$((fb + 1))
            assert_equal "$SA" R "look $n: thread states of running 7.0"
            assert_equal "$SB" S "look $n: thread states of frozen 8.0" ;;
        10) fa=$((fa + 1)) rb=$((rb + 1))
            assert_equal "$SA" S "look $n: thread states of frozen 7.0"
            assert_equal "$SB" R "look $n: thread states of running 8.0" ;;
        11) ;;  # the instant of a switch: the leaver is frozen before the entrant thaws
        *) echo "look $n: unexpected frozen values '$A' '$B'" >&2; return 1 ;;
        esac
        sleep 0.05
    done
}

# ------------------------------------------------------------------ 1. ping, gang, tft

@test "ping answers with the protocol version, the engine's pid and its policy" {
    serve_start --policy gang
    run cs_send 'COSCHED/1 ping'
    [ "$status" -eq 0 ]
    assert_equal "$output" "OK version=1 pid=$ENGINE policy=gang" "ping reply"
    assert_contains "$(cat engine.log)" "node engine pid $ENGINE listening on $SOCK: policy gang, quantum 0.1 s"
}

@test "gang: each step is frozen until its turn and runs in its turn, never both at once; slurmstepd never frozen" {
    two_steps --policy gang --quantum 300ms
    assert_equal "$ID" 2 "id of the second step"
    gang_turns
}

@test "tft: two steps are folded side by side on disjoint cpus, both running (affinity from /proc)" {
    requires multicore
    two_steps --policy tft
    folded_apart() {
        local ca cb
        ca=$(task_cpus "$a") cb=$(task_cpus "$b")
        [ "$(step_frozen 7 0)$(step_frozen 8 0)" = 00 ] && [ "$(echo "$ca" | wc -l)" = 1 ] &&
            [ "$(echo "$cb" | wc -l)" = 1 ] && [ "$ca" != "$ALL" ] && [ "$cb" != "$ALL" ] && disjoint "$ca" "$cb" &&
            [ "$(thread_states "$a")$(thread_states "$b")" = RR ] && return 0
        echo "7.0: frozen=$(step_frozen 7 0) cpus=$ca; 8.0: frozen=$(step_frozen 8 0) cpus=$cb" >&2
        return 1
    }
    wait_for 10 folded_apart
    # ten more looks; each may land in a replan (a switch of halves, longer on
    # a busy machine): it is taken again, never more than 5 s later
    for i in $(seq 10); do
        wait_for 5 folded_apart
        sleep 0.05
    done
    assert_equal "$(step_field 7.0 state)" folded "7.0 in status"
    assert_equal "$(step_field 7.0 cpus)" "$(task_cpus "$a")" "7.0's cpus in status vs /proc"
}

@test "register under a policy whose steps share cpus (linux): the reply says shares_cpus=1 (the plugin keeps passive OpenMP waiting)" {
    fake_step 7 0
    fake_task 7 0 0 a
    serve_start --policy linux
    run cs_register 7 0 "$a"
    echo "$output"
    [[ $output =~ ^OK\ id=1\ policy=linux\ shares_cpus=1$ ]] || { echo "want 'OK id=1 policy=linux shares_cpus=1'"; false; }
}

@test "Slurm 22.05, 23-25, 25.11 (CgroupSlice) and 26.05 (SLUID) layouts: each step found from its task's cgroup, co-scheduled (gang), given back" {
    local j=11 L
    for L in 22.05 23-25 25.11 26.05; do
        fake_layout "$L"
        fake_step "$j" 0
        fake_task "$j" 0 0 "t$j"
        j=$((j + 1))
    done
    serve_start --policy gang --quantum 100ms
    j=11
    for L in 22.05 23-25 25.11 26.05; do
        fake_layout "$L"
        run cs_register_stepd "$j" 0 "$(cat "t$j.pid")"
        [[ $output =~ ^OK\ id= ]] || { echo "layout $L: step $j.0: $output" >&2; false; }
        j=$((j + 1))
    done
    [ -d "$FAKE_ROOT/system.slice/node1_slurmstepd.scope/$(job_dir_name 14)/step_0/user" ]
    # every step takes turns: it runs in some quanta and waits in others
    wait_for 20 '[ "$(status_json | python3 -c "
import json, sys
print(sum(1 for s in json.load(sys.stdin)[\"steps\"] if s[\"quanta_run\"] >= 1 and s[\"quanta_waited\"] >= 1))")" = 4 ]'
    kill -TERM "$ENGINE"
    wait "$ENGINE" || true
    j=11
    for L in 22.05 23-25 25.11 26.05; do
        fake_layout "$L"
        assert_equal "$(step_frozen "$j" 0)" 0 "frozen of $j.0 ($L layout) after the engine stopped"
        slurmstepd_thawed "$j" 0
        j=$((j + 1))
    done
}

# other_runs: another run is on this machine (side by side, tests/README): its fake Slurm tree,
# or a cosched of another build (a second clone's engine, which scans the whole node at its start)
other_runs() {
    local d
    for d in "$(dirname "$FAKE_TOP")"/cosched-fakeslurm-*; do
        [ -d "$d" ] && [ "$d" != "$FAKE_TOP" ] && return 0
    done
    foreign_cosched
}

@test "a new engine thaws what a dead engine left frozen under every layout: any slice, any job directory name" {
    local j=11 L
    for L in 22.05 23-25 25.11 26.05; do
        fake_layout "$L"
        fake_step "$j" 0
        fake_task "$j" 0 0 "t$j"
        echo 1 > "$(step_dir "$j" 0 user)/cgroup.freeze"
        j=$((j + 1))
    done
    # another run seen while our groups wait frozen, before our engine's scan
    local others=0
    other_runs && others=1
    serve_start --policy gang
    other_runs && others=1
    j=11
    for L in 22.05 23-25 25.11 26.05; do
        fake_layout "$L"
        assert_equal "$(step_frozen "$j" 0)" 0 "frozen of $j.0 ($L layout) after the engine started"
        # the log line follows the thaw: on a loaded machine, a moment later.  Side by side with
        # another run, that run's engine may thaw it first: an engine's start scans the node's whole
        # cgroup tree (a node has one engine), another run's fake trees included
        wait_for 10 "grep -qF '$(step_dir "$j" 0 user) was left frozen' engine.log" || [ "$others" = 1 ] || other_runs ||
            assert_contains "$(cat engine.log)" "$(step_dir "$j" 0 user) was left frozen"
        j=$((j + 1))
    done
}

# ------------------------------------------------------------------ 2. tasks of a step

@test "a second task of a step joins it: one step of 2 tasks, both frozen and thawed together" {
    fake_step 7 0
    fake_step 8 0
    fake_task 7 0 0 a
    fake_task 7 0 1 a2
    fake_task 8 0 0 b
    # quanta of 1 s: a look that spans a whole quantum (thawed and frozen
    # again between its two reads of user/) would compare the tasks of one
    # state with user/ of the next; on a loaded machine a look can take
    # longer than 300 ms, and one that took 0.9 s or more is not counted
    serve_start --policy gang --quantum 1s
    registered 7 0 "$a" task=0 ntasks=2
    id=$ID
    registered 7 0 "$a2" task=1 ntasks=2
    assert_equal "$ID" "$id" "id given to the second task"
    registered 8 0 "$b"
    assert_equal "$(step_field 7.0 tasks)" 2 "tasks of 7.0 in status"
    local t0 t1 s0 s1 u start seen_f=0 seen_r=0 n=0
    while [ $seen_f -lt 2 ] || [ $seen_r -lt 2 ]; do
        n=$((n + 1))
        [ $n -lt 400 ] || { echo "7.0 seen frozen $seen_f and running $seen_r times in $n looks" >&2; false; }
        start=$(_cs_now_us)
        u=$(settled 7 0)
        [ "$u" != x ] || continue                       # being frozen right now
        t0=$(awk '$1 == "frozen" { print $2 }' "$(step_dir 7 0 user/task_0)/cgroup.events")
        t1=$(awk '$1 == "frozen" { print $2 }' "$(step_dir 7 0 user/task_1)/cgroup.events")
        s0=$(thread_states "$a") s1=$(thread_states "$a2")
        [ "$u" = "$(settled 7 0)" ] || continue         # a switch during the look
        [ $(($(_cs_now_us) - start)) -lt 900000 ] || continue   # or a switch and back
        assert_equal "$t0 $t1" "$u $u" "frozen of task_0 and task_1 when user/ reads $u (look $n)"
        if [ "$u" = 1 ]; then
            assert_equal "$s0 $s1" "S S" "thread states of both tasks while frozen (look $n)"
            seen_f=$((seen_f + 1))
        else
            assert_equal "$s0 $s1" "R R" "thread states of both tasks while running (look $n)"
            seen_r=$((seen_r + 1))
        fi
        sleep 0.05
    done
}

@test "a task joining a folded step is folded with it (tft): it gets the step's cpus, not its partner's" {
    requires multicore
    two_steps --policy tft
    wait_for 10 '[ "$(task_cpus "$a")" != "$ALL" ] && [ "$(task_cpus "$b")" != "$ALL" ]'
    fake_task 7 0 1 a2
    assert_equal "$(task_cpus "$a2")" "$ALL" "cpus of the new task before it registers"
    registered 7 0 "$a2" task=1
    wait_for 5 '[ "$(task_cpus "$a2")" = "$(task_cpus "$a")" ]'
    disjoint "$(task_cpus "$a2")" "$(task_cpus "$b")"
}

@test "register refuses a pid that is not in the named step's cgroups, naming the pid and the step" {
    fake_step 7 0
    fake_step 8 0
    fake_task 8 0 0 b
    "$PROGS/spin" -p outside.pid 3>&- &
    wait_for 5 test -s outside.pid
    out=$(cat outside.pid)
    stepd=$(cat stepd_7_0.pid)
    serve_start --policy gang
    run cs_register 7 0 "$b"
    assert_contains "$output" "ERR pid $b is in /"
    assert_contains "$output" "/job_8/step_0, a step of job 8, not of job 7"
    run cs_register 7 0 "$out"
    assert_contains "$output" "ERR pid $out is not in the cgroups of Slurm step 7.0"
    # slurmstepd's group of the right step is not where the tasks are
    run cs_register 7 0 "$stepd"
    assert_contains "$output" "ERR pid $stepd is in "
    assert_contains "$output" "where Slurm's cgroup/v2 puts a step's tasks"
    [ "${#lines[@]}" -eq 1 ]
    # nothing taken, nothing frozen, the engine answers
    run status_json
    assert_contains "$output" '"steps":[]'
    assert_equal "$(step_frozen 8 0)" 0 "frozen of 8.0"
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
}

@test "register refuses a pid that does not exist" {
    serve_start --policy gang
    nopid=$(($(cat /proc/sys/kernel/pid_max) + 1))
    run cs_register 7 0 "$nopid"
    assert_equal "$output" "ERR pid $nopid does not exist"
    run cs_register 7 0 1
    assert_contains "$output" "ERR key 'pid': expected an integer in [2,"
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
}

# ------------------------------------------------------------------ 3. leaving

@test "a task that exits leaves by itself (pidfd, no deregister): status forgets its step, the log says so" {
    fake_step 7 0
    fake_step 8 0
    # a task that ends by itself once told to (it burns cpu meanwhile)
    fake_task 7 0 0 a bash -c "while [ ! -e '$BATS_TEST_TMPDIR/stop' ]; do :; done"
    fake_task 8 0 0 b
    serve_start --policy gang --quantum 200ms
    registered 7 0 "$a"
    registered 8 0 "$b"
    assert_equal "$(step_field 7.0 tasks)" 1 "7.0 listed with its task"
    touch stop
    wait_for 10 _cs_gone "$a"
    wait_for 10 '[ -z "$(step_field 7.0 state)" ]'
    assert_contains "$(cat engine.log)" "(7.0) left the node engine: its tasks ended"
    # the step left behind runs alone, on all its cpus
    wait_for 5 restored 8 0 "$b"
    assert_equal "$(step_field 8.0 state)" running "8.0 alone"
}

@test "deregister: the step leaves at once, thawed and on all its cpus, and its process keeps running" {
    fake_steps 7:a 8:b 9:c
    serve_start --policy tft --quantum 300ms
    registered 7 0 "$a"
    registered 8 0 "$b"
    registered 9 0 "$c"
    # deregister 7.0 while the kernel says it is frozen, then while folded
    wait_for 10 '[ "$(step_frozen 7 0)" = 1 ]'
    run cs_send "COSCHED/1 deregister job=7 step=0 pid=$a"
    assert_equal "$output" OK "deregister reply"
    restored 7 0 "$a"
    [ -z "$(step_field 7.0 state)" ]
    if [ "$NCPU" -gt 1 ]; then
        wait_for 10 '[ "$(task_cpus "$b")" != "$ALL" ]'
        run cs_send "COSCHED/1 deregister job=8 step=0 pid=$b"
        assert_equal "$output" OK "deregister reply"
        restored 8 0 "$b"
    fi
    # they stay free: the engine no longer touches them
    for i in $(seq 10); do
        restored 7 0 "$a"
        sleep 0.05
    done
    assert_contains "$(cat engine.log)" "(7.0) left the node engine: its tasks ended"
}

@test "deregister of an unknown step or task is OK (the pidfd may have been first)" {
    fake_step 7 0
    fake_task 7 0 0 a
    serve_start --policy gang
    run cs_send "COSCHED/1 deregister job=99 step=0 pid=$a"
    assert_equal "$output" "OK unknown=1"
    registered 7 0 "$a"
    run cs_send "COSCHED/1 deregister job=7 step=0 pid=12345"
    assert_equal "$output" "OK unknown=1"
    assert_equal "$(step_field 7.0 tasks)" 1 "7.0 keeps its task"
}

# ------------------------------------------------------------------ 4. security

@test "register and deregister from a non-root uid are refused with the reason; the engine is unharmed" {
    fake_steps 7:a 8:b
    serve_start --policy gang --quantum 200ms
    registered 7 0 "$a"
    run cs_send_as nobody "COSCHED/1 register job=8 step=0 uid=65534 pid=$b cores=$ALL"
    assert_equal "$output" "ERR register is for root (the Slurm plugin) only; you are uid 65534"
    run cs_send_as nobody "COSCHED/1 deregister job=7 step=0 pid=$a"
    assert_equal "$output" "ERR deregister is for root (the Slurm plugin) only; you are uid 65534"
    assert_contains "$(cat engine.log)" "refused register from uid 65534"
    # 7.0 is still the engine's, 8.0 never was
    assert_equal "$(step_field 7.0 tasks)" 1 "7.0 tasks"
    assert_equal "$(step_field 8.0 tasks)" "" "8.0 in status"
    for i in $(seq 5); do
        assert_equal "$(step_frozen 8 0)" 0 "frozen of 8.0"
        sleep 0.05
    done
    run cs_send_as nobody 'COSCHED/1 ping'
    assert_equal "$output" "OK version=1 pid=$ENGINE policy=gang"
    # and it still schedules: 8.0 registered by root now takes turns with 7.0
    registered 8 0 "$b"
    gang_turns
}

@test "policies see each step's user as job.owner, the uid it registered with" {
    mkdir -m 755 pol
    cat > pol/owners.lua <<'EOF'
-- test: logs every job's owner, runs every job on every cpu
return { api = 1, name = "owners", description = "test: logs job.owner",
  plan = function(snap)
    local said, jobs = {}, {}
    for _, j in ipairs(snap.jobs) do
      said[#said + 1] = j.name .. "=" .. tostring(j.owner)
      jobs[#jobs + 1] = { id = j.id, cpus = snap.cpus }
    end
    cosched.log("info", "owners " .. table.concat(said, " "))
    return { { shared = true, jobs = jobs } }
  end }
EOF
    chmod 644 pol/owners.lua
    fake_steps 7:a 8:b
    serve_start --policy owners --policy-path "$BATS_TEST_TMPDIR/pol"
    registered 7 0 "$a" uid=0
    registered 8 0 "$b" uid=65534
    wait_for 10 "grep -q 'owners 7.0=0 8.0=65534' '$BATS_TEST_TMPDIR/engine.log'"
}

@test "status: a user sees only their own steps, root sees every step" {
    fake_steps 7:a 8:b
    serve_start --policy gang
    registered 7 0 "$a" uid=0
    registered 8 0 "$b" uid=65534
    run runuser -u nobody -- "$COSCHED" status --socket "$SOCK"
    [ "$status" -eq 0 ]
    assert_contains "$output" "8.0 "
    assert_contains "$output" " nobody "
    [[ $output != *"7.0 "* ]] || { echo "nobody sees 7.0 (root's): $output" >&2; false; }
    run status_json nobody
    [ "$status" -eq 0 ]
    got=$(echo "$output" | python3 -c 'import json, sys; print(" ".join("%d.%d:%s" % (s["job"], s["step"], s["user"]) for s in json.load(sys.stdin)["steps"]))')
    assert_equal "$got" "8.0:nobody" "steps nobody sees"
    run status_json
    got=$(echo "$output" | python3 -c 'import json, sys; print(" ".join(sorted("%d.%d:%s" % (s["job"], s["step"], s["user"]) for s in json.load(sys.stdin)["steps"])))')
    assert_equal "$got" "7.0:root 8.0:nobody" "steps root sees"
    # a user with no step is told so
    run runuser -u daemon -- "$COSCHED" status --socket "$SOCK"
    [ "$status" -eq 0 ]
    assert_contains "$output" "(no co-scheduled step of yours on this node)"
}

@test "malformed requests each get one ERR line naming the problem; the engine keeps working" {
    two_steps --policy gang
    local -a bad=(
        'ping'                                        "request speaks 'ping', this engine speaks COSCHED/1"
        'COSCHED/2 ping'                              "request speaks 'COSCHED/2', this engine speaks COSCHED/1"
        ''                                            "empty request"
        'COSCHED/1'                                   "request has no verb"
        'COSCHED/1 frobnicate'                        "unknown verb 'frobnicate'"
        'COSCHED/1 Ping'                              "request has no verb"
        'COSCHED/1 register Job=7'                    "bad key 'Job' (expected 1-31 characters of a-z and _)"
        'COSCHED/1 register job=7 job=8'              "key 'job' given twice"
        'COSCHED/1 register job'                      "'job' is not key=value"
        'COSCHED/1 register job='                     "key 'job': bad value"
        'COSCHED/1 ping\x07'                          "request holds a control or non-ASCII byte at offset 14"
        'COSCHED/1 ping x=\xc3\xa9'                   "request holds a control or non-ASCII byte at offset 17"
        'COSCHED/1 ping\x00 x=1'                      "request holds a NUL or a second line"
        'COSCHED/1 ping\r'                            "request holds a control or non-ASCII byte"
        "COSCHED/1 register job=9 step=0 uid=0 pid=abc cores=0"   "key 'pid': expected an integer in [2, 2147483647], got 'abc'"
        "COSCHED/1 register job=9 step=0 uid=0 pid=-5 cores=0"    "key 'pid': expected an integer"
        "COSCHED/1 register job=9 step=0 uid=0 pid=99999999999999999999 cores=0"  "key 'pid': expected an integer"
        "COSCHED/1 register job=9 step=0 uid=0 cores=0"          "register: key 'pid' missing"
        "COSCHED/1 register step=0 uid=0 pid=$a cores=0"         "register: key 'job' missing"
        "COSCHED/1 register job=9 step=0 uid=0 pid=$a"           "register: key 'cores' missing"
        "COSCHED/1 register job=9 step=0 uid=0 pid=$a cores=0 omp_page=2"  "key 'omp_page': expected an integer in [0, 1], got '2'"
        "COSCHED/1 deregister job=7 step=0"                      "deregister: key 'pid' missing"
        "COSCHED/1 ping a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=1 k=1 l=1 m=1 n=1 o=1 p=1 q=1 r=1 s=1 t=1 u=1 v=1 w=1 x=1 y=1"  "more than 24 keys"
    )
    for ((i = 0; i < ${#bad[@]}; i += 2)); do
        run cs_send "${bad[i]}"
        [ "$status" -eq 0 ] || { echo "request '${bad[i]}': client status $status: $output" >&2; false; }
        [ "${#lines[@]}" -eq 1 ] || { echo "request '${bad[i]}': want one line, got: $output" >&2; false; }
        [[ $output == "ERR "* ]] || { echo "request '${bad[i]}': want ERR, got: $output" >&2; false; }
        assert_contains "$output" "${bad[i + 1]}" "reply to '${bad[i]}'"
    done
    # nothing of it reached the steps: both still registered, still taking turns
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    assert_equal "$(step_field 7.0 tasks) $(step_field 8.0 tasks)" "1 1" "tasks of 7.0 and 8.0"
    q=$(quanta 7.0)
    wait_for 10 "[ \$(quanta 7.0) -ge $((q + 3)) ]"
}

@test "a truncated request (no newline, then EOF) and oversized requests are refused; 4096 bytes pass" {
    serve_start --policy gang
    run cs_send 'COSCHED/1 ping' --nonl
    assert_equal "$output" "ERR request truncated: no newline before the end of the connection"
    # exactly the limit, newline included: accepted
    v1017=$(printf '%01017d' 0)
    req="COSCHED/1 ping a=$v1017 b=$v1017 c=$v1017 d=${v1017}0"
    assert_equal "$((${#req} + 1))" 4096 "request length"
    run cs_send "$req"
    assert_equal "$output" "OK version=1 pid=$ENGINE policy=gang" "reply to a request of 4096 bytes"
    # one byte more, newline at the end
    run cs_send "${req}0"
    assert_equal "$output" "ERR request of 4097 bytes is longer than the limit of 4096"
    # far more, with and without newline
    big=$(printf '%05000d' 0)
    run cs_send "COSCHED/1 ping a=$big"
    assert_equal "$output" "ERR request longer than the limit of 4096 bytes"
    run cs_send "COSCHED/1 ping a=$big" --nonl
    assert_equal "$output" "ERR request longer than the limit of 4096 bytes"
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    assert_contains "$(cat engine.log)" "refused an oversized request"
    assert_contains "$(cat engine.log)" "refused a truncated request"
}

# accepted: the engine holds a connection it accepted on $SOCK (a socket of
# /proc/net/unix bound to that path and connected, St 03, among the engine's
# fds), not only the listening one
accepted() {
    python3 - "$ENGINE" "$SOCK" <<'PY'
import os, sys
pid, path = sys.argv[1:]
conn = {"socket:[%s]" % f[6] for f in (l.split() for l in open("/proc/net/unix").readlines()[1:])
        if len(f) >= 8 and f[7] == path and f[5] == "03"}
fds = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        fds.add(os.readlink("/proc/%s/fd/%s" % (pid, fd)))
    except OSError:
        pass
sys.exit(0 if conn & fds else 1)
PY
}

@test "a client that sends nothing gets an ERR after the deadline; the engine keeps scheduling meanwhile" {
    two_steps --policy gang
    cs_send '' --silent > silent.out 2>&1 3>&- &
    cl=$!
    # once the engine holds the connection, 7.0's freezer must keep changing
    # (gang, 100 ms quanta) while the client is silent: read from the kernel,
    # not with `cosched status` (which took over 1 s under ASan on a busy host)
    wait_for 5 accepted || { echo "the engine did not accept the silent client's connection" >&2; false; }
    local f prev flips=0
    prev=$(step_frozen 7 0)
    while kill -0 "$cl" 2>/dev/null; do
        f=$(step_frozen 7 0)
        kill -0 "$cl" 2>/dev/null && [ "$f" != "$prev" ] && flips=$((flips + 1))
        prev=$f
        sleep 0.02
    done
    wait "$cl"
    assert_equal "$(cat silent.out)" "ERR no complete request within 2 s" "reply to the silent client"
    [ $flips -ge 2 ] || { echo "7.0 was frozen or thawed $flips times while the silent client waited" >&2; false; }
}

@test "many connections at once: each gets one ERR line, the engine keeps working" {
    two_steps --policy gang --quantum 300ms
    run cs_send 'x' --many 100
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 100 ]
    for ((k = 0; k < 100; k++)); do
        [[ ${lines[k]} == "$k ERR request speaks 'x', this engine speaks COSCHED/1" ||
           ${lines[k]} == "$k ERR the engine is busy (too many connections); try again" ]] ||
            { echo "connection $k: ${lines[k]}" >&2; false; }
    done
    # silent ones (root's): the 256 the engine holds time out, the others are turned away at once
    run cs_send '' --silent --many 300
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 300 ]
    nbusy=0 nlate=0
    for ((k = 0; k < 300; k++)); do
        case ${lines[k]} in
        "$k ERR no complete request within 2 s") nlate=$((nlate + 1)) ;;
        "$k ERR the engine is busy (too many connections); try again") nbusy=$((nbusy + 1)) ;;
        *) echo "connection $k: ${lines[k]}" >&2; false ;;
        esac
    done
    [ "$nbusy" -ge 44 ] || { echo "only $nbusy of 300 silent connections turned away (at most 256 held)" >&2; false; }
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    gang_turns
}

# ------------------------------------------------------------------ 5. status

@test "status --json: valid JSON with every field, and the state agrees with the kernel" {
    two_steps --policy gang --quantum 2s
    run status_json
    [ "$status" -eq 0 ]
    echo "$output" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
want = ["job", "step", "user", "policy", "asked_policy", "class", "state", "reason", "cpus", "allocation",
        "quanta_run", "quanta_waited"]
assert set(d["engine"]) >= {"pid", "policy", "quantum"}, d["engine"]
assert len(d["steps"]) == 2, d["steps"]
for s in d["steps"]:
    missing = [k for k in want if k not in s]
    assert not missing, "missing %s in %s" % (missing, s)
    assert s["user"] == "root" and s["policy"] == "gang" and s["asked_policy"] == "gang", s
    assert s["state"] in ("running", "frozen", "folded"), s
    assert s["class"] is None or s["class"] in "SCN", s
    assert isinstance(s["quanta_run"], int) and isinstance(s["quanta_waited"], int), s
    assert isinstance(s["reason"], str) and s["reason"], s
'
    assert_equal "$(step_field 7.0 allocation)" "$ALL" "allocation of 7.0"
    assert_equal "$(step_field 7.0 cpus)" "$ALL" "cpus of 7.0 under gang"
    # the state status reports is the kernel's, frozen and running alike.  A
    # look is `cosched status` read between two readings of the step's freezer
    # (settled: cgroup.freeze and cgroup.events agree, the step is not half
    # way); it counts when both readings agree and it took less than a
    # quantum: steps under gang last a quantum at least, so no switch fell
    # inside it (one would change the reading), and status must agree.  A
    # longer look is not counted: under ASan on a loaded host one `cosched
    # status` took over 1 s, and a switch and back fell inside 1 s quanta.
    local sf=0 sr=0 n=0 long=0 e1 st e2 t0
    while [ $sf -lt 2 ] || [ $sr -lt 2 ]; do
        n=$((n + 1))
        [ $n -lt 300 ] || {
            echo "status said frozen $sf and running $sr times in $n looks ($long took 1.9 s or more)" >&2
            false
        }
        t0=$(_cs_now_us)
        e1=$(settled 7 0)
        st=$(step_field 7.0 state)
        e2=$(settled 7 0)
        [ "$e1" = "$e2" ] && [ "$e1" != x ] || continue
        [ $(($(_cs_now_us) - t0)) -lt 1900000 ] || { long=$((long + 1)); continue; }
        case $e1:$st in
        1:frozen) sf=$((sf + 1)) ;;
        0:running) sr=$((sr + 1)) ;;
        *) echo "look $n: status says '$st' while the step's freezer says frozen $e1 before and after" >&2
           false ;;
        esac
    done
}

@test "status text: a header and one line per step with user, policy, state, cpus and the reason" {
    two_steps --policy gang
    run "$COSCHED" status --socket "$SOCK"
    [ "$status" -eq 0 ]
    assert_contains "${lines[0]}" "cosched node engine pid $ENGINE, policy gang, quantum 0.1 s"
    assert_contains "${lines[1]}" "STEP"
    assert_contains "${lines[1]}" "WHY"
    [ "${#lines[@]}" -eq 4 ]
    [[ ${lines[2]} =~ ^7\.0\ +root\ +.*\ gang\ +-\ +(running|frozen)\ +$ALL\  ]] || { echo "line: ${lines[2]}" >&2; false; }
    [[ ${lines[3]} =~ ^8\.0\ +root\ +.*\ gang\ +-\ +(running|frozen)\ +$ALL\  ]] || { echo "line: ${lines[3]}" >&2; false; }
}

@test "why is my step frozen: a frozen step's reason names the policy and the step that runs" {
    two_steps --policy gang --quantum 300ms
    why_frozen() {
        status_json | python3 -c '
import json, sys
st = {"%d.%d" % (s["job"], s["step"]): s for s in json.load(sys.stdin)["steps"]}
a, b = st["7.0"], st["8.0"]
if a["state"] != "frozen" or b["state"] != "running":
    sys.exit("7.0 %s, 8.0 %s" % (a["state"], b["state"]))
print(a["reason"])'
    }
    for i in $(seq 200); do
        why=$(why_frozen 2>/dev/null) && break
        sleep 0.05
    done
    assert_contains "$why" "waiting for its turn: policy gang runs 8.0 in this quantum" "reason of frozen 7.0"
}

@test "cosched status with no engine running says so and exits 1" {
    for args in "" --json; do
        run "$COSCHED" status $args --socket "$SOCKDIR/none.sock"
        [ "$status" -eq 1 ]
        assert_contains "$output" "no node engine runs here"
        [ "${#lines[@]}" -eq 1 ]
    done
}

@test "--metrics: a Prometheus text file, replaced whole every 5 s: steps, refusals by reason, frozen seconds per job, switch latency histogram; up 0 at stop" {
    mkdir -m 755 prom
    fake_step 9 0
    two_steps --policy gang --quantum 100ms --metrics "$PWD/prom/cosched.prom"
    run cs_register 9 0 "$a"
    assert_contains "$output" "ERR pid $a is in /"
    run cs_send_as nobody "COSCHED/1 register job=1 step=0 uid=0 pid=$a cores=0"
    local m=prom/cosched.prom
    wait_for 15 'grep -q "^cosched_steps_refused_total{reason=\"not_in_step\"} 1$" $m &&
                 grep -q "^cosched_steps_refused_total{reason=\"not_root\"} 1$" $m'
    wait_for 15 'awk "/^cosched_job_frozen_seconds\{job=\"7\"\}/ { exit !(\$2 > 0) }" $m'
    cat "$m"
    grep -qx 'cosched_up 1' "$m"
    grep -qx 'cosched_steps_coscheduled_total 2' "$m"
    grep -q '^cosched_steps{state="frozen"} [01]$' "$m"
    grep -qx 'cosched_policy_errors_total 0' "$m"
    grep -q '^cosched_idle_while_frozen_cpu_seconds_total{cpus="nobody"} [0-9]*\.[0-9][0-9]$' "$m"
    grep -q '^cosched_idle_while_frozen_cpu_seconds_total{cpus="held"} [0-9]*\.[0-9][0-9]$' "$m"
    [ ! -e "$m.tmp" ]
    # every sample line is NAME{LABELS} VALUE, every family has HELP and TYPE;
    # the histogram's buckets are cumulative and end with +Inf = count > 0
    python3 - "$m" <<'PY'
import re, sys
fams, typed, buckets, count = set(), set(), [], None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# TYPE "):
        typed.add(line.split()[2]); continue
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)(\{[a-z_]+="[^"]*"\})? (-?[0-9.e+]+)', line)
    assert m, line
    name = m.group(1)
    base = re.sub(r"_(bucket|sum|count)$", "", name) if name.startswith("cosched_switch_latency") else name
    assert base in typed, line
    if name.endswith("_bucket"):
        buckets.append(float(m.group(3)))
    if name == "cosched_switch_latency_seconds_count":
        count = float(m.group(3))
assert buckets == sorted(buckets) and buckets[-1] == count and count > 0, (buckets, count)
PY
    kill -TERM "$ENGINE"
    wait "$ENGINE" || true
    grep -qx 'cosched_up 0' "$m"
    # a directory anybody may write is refused
    run "$COSCHED" serve --socket "$SOCKDIR/x.sock" --metrics /tmp/cosched.prom
    [ "$status" -eq 2 ]
    assert_contains "$output" "--metrics /tmp/cosched.prom: its directory /tmp is writable by others"
}

# ------------------------------------------------------------------ 6. no job left behind

three_folded() {  # tft with 3 steps until one is frozen and the others folded
    fake_step 9 0
    fake_task 9 0 0 c
    two_steps --policy tft --quantum 200ms
    registered 9 0 "$c"
    if [ "$NCPU" -gt 1 ]; then
        wait_for 10 '[ "$(step_frozen 7 0)$(step_frozen 8 0)$(step_frozen 9 0)" = 100 ] &&
                     [ "$(task_cpus "$b")" != "$ALL" ] && [ "$(task_cpus "$c")" != "$ALL" ]'
    else
        wait_for 10 '[ "$(step_frozen 7 0)" = 1 ]'
    fi
}

@test "SIGTERM: every step is thawed and back on all its cpus, its processes run on; socket removed" {
    three_folded
    kill -TERM "$ENGINE"
    st=0
    wait "$ENGINE" || st=$?
    assert_equal "$st" 0 "exit status of the engine"
    restored 7 0 "$a"
    restored 8 0 "$b"
    restored 9 0 "$c"
    for s in 7 8 9; do slurmstepd_thawed "$s" 0; done
    [ ! -e "$SOCK" ] || { echo "socket $SOCK left behind" >&2; false; }
    assert_contains "$(cat engine.log)" "giving every step back to Slurm"
    wait_for 5 no_cosched_process
}

@test "kill -9 of the engine: the guardian thaws every step and gives back its cpus; a new engine can start" {
    three_folded
    kill -KILL "$ENGINE"
    wait "$ENGINE" || true
    wait_for 2 restored 7 0 "$a"
    wait_for 2 restored 8 0 "$b"
    wait_for 2 restored 9 0 "$c"
    wait_for 5 no_cosched_process
    # the lock died with the engine: a new one serves the same socket
    serve_start --policy gang
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
}

# bound_step: step 7.0 of three tasks bound as `srun --cpu-bind=mask_cpu:0x3,0x2,0x1`
# would (task 0 pid $a on CPUs 0-1, task 1 pid $a1 on CPU 1, task 2 pid $a2 on
# CPU 0), step 8.0 (pid $b) unbound, under tft; returns once 7.0 was folded
# (its tasks' bindings gone).  Task 0 is unbound because without a cpuset
# controller (this machine's cgroup2) the engine takes a v2 step's cores from
# its first task's affinity.
bound_step() {
    fake_step 7 0
    fake_step 8 0
    fake_task 7 0 0 a
    fake_task 7 0 1 a1 --cpus 1
    fake_task 7 0 2 a2 --cpus 0
    fake_task 8 0 0 b
    serve_start --policy tft --quantum 200ms
    registered 7 0 "$a"
    registered 7 0 "$a1"
    registered 7 0 "$a2"
    registered 8 0 "$b"
    wait_for 10 '[ "$(task_cpus "$a1")" = "$(task_cpus "$a2")" ] && [ "$(task_cpus "$b")" != "$ALL" ]'
}

# own_binding PID CPU: every thread of PID on exactly CPU (a binding kept)
own_binding() {
    local c
    c=$(task_cpus "$1")
    [ "$c" = "$2" ] && return 0
    echo "pid $1: threads on '$(echo $c)', want all of them on its own binding $2" >&2
    return 1
}

@test "a task's own CPU binding (--cpu-bind) survives the moves: back on its CPU when the step has it again, and on release" {
    requires multicore
    bound_step
    # folded: the tasks share the step's one CPU (the kernel's rule for a
    # binding outside the set), never a CPU outside the step's
    assert_equal "$(task_cpus "$a")" "$(task_cpus "$a1")" "7.0's tasks while folded"
    assert_equal "$(task_cpus "$a")" "$(task_cpus "$a2")" "7.0's tasks while folded"
    # 8.0 leaves: 7.0 holds the node again, each task on its own CPUs
    run cs_send "COSCHED/1 deregister job=8 step=0 pid=$b"
    assert_equal "$output" OK "deregister reply"
    wait_for 10 own_binding "$a1" 1
    wait_for 10 own_binding "$a2" 0
    own_binding "$a" "$ALL"
    # 8.0 comes back (folded again), then the engine ends: bindings given back
    registered 8 0 "$b"
    wait_for 10 '[ "$(task_cpus "$a1")" = "$(task_cpus "$a2")" ]'
    kill -TERM "$ENGINE"
    wait "$ENGINE" || true
    own_binding "$a1" 1
    own_binding "$a2" 0
    own_binding "$a" "$ALL"
    assert_equal "$(task_cpus "$b")" "$ALL" "unbound 8.0 after release"
    assert_equal "$(step_frozen 7 0)$(step_frozen 8 0)" 00 "frozen after release"
}

@test "kill -9 of the engine while a bound step is folded: the guardian gives each task its own CPU back" {
    requires multicore
    bound_step
    # the guardian's record carries the bindings once they were learnt
    wait_for 10 "cat '$SOCK'.held/* 2>/dev/null | grep -q '=1;.*=0'"
    kill -KILL "$ENGINE"
    wait "$ENGINE" || true
    wait_for 5 own_binding "$a1" 1
    wait_for 5 own_binding "$a2" 0
    wait_for 5 own_binding "$a" "$ALL"
    wait_for 5 '[ "$(task_cpus "$b")" = "$ALL" ]'
    assert_equal "$(step_frozen 7 0)$(step_frozen 8 0)" 00 "frozen after the guardian"
}

@test "a policy that errors in plan(): fallback, every step runs on all its cpus, none stays frozen" {
    mkdir -m 755 pol
    cat > pol/boom.lua <<'EOF'
-- test: a policy whose plan() always raises
return { api = 1, name = "boom", description = "test: errors in plan()",
  plan = function(snap) error("boom in plan") end }
EOF
    chmod 644 pol/boom.lua
    two_steps --policy boom --policy-path "$BATS_TEST_TMPDIR/pol"
    wait_for 10 '[ "$(step_frozen 7 0)$(step_frozen 8 0)" = 00 ]'
    for i in $(seq 20); do
        restored 7 0 "$a"
        restored 8 0 "$b"
        sleep 0.05
    done
    assert_contains "$(cat engine.log)" "policy boom failed in epoch"
    assert_contains "$(cat engine.log)" "boom in plan"
}

# ------------------------------------------------------------------ 7. trust

@test "--policy-path to a directory not owned by root or writable by group or others is refused, naming it" {
    mkdir -m 755 mine ww gw
    chown nobody mine
    chmod 777 ww
    chmod 775 gw
    for d in mine ww gw; do
        run "$COSCHED" serve --socket "$SOCK" --policy-path "$BATS_TEST_TMPDIR/$d"
        [ "$status" -eq 2 ] || { echo "--policy-path $d: status $status: $output" >&2; false; }
        assert_contains "$output" "--policy-path $BATS_TEST_TMPDIR/$d: $BATS_TEST_TMPDIR/$d is not owned by root or is writable by others"
        [ ! -e "$SOCK" ]
    done
    no_cosched_process
}

@test "a step asking for a policy that is not installed is refused, naming it; the engine keeps its policy" {
    fake_step 7 0
    fake_task 7 0 0 a
    serve_start --policy gang
    run cs_register 7 0 "$a" policy=doesnotexist
    assert_contains "$output" "ERR policy 'doesnotexist' is not installed on this node"
    run cs_register 7 0 "$a" policy=../../tmp/x
    assert_contains "$output" "ERR policy '../../tmp/x': a policy name is letters, digits, '_' and '-'"
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    assert_equal "$(step_field 7.0 state)" "" "7.0 in status"
    assert_equal "$(step_frozen 7 0)" 0 "frozen of 7.0"
}

@test "a step asking for another installed policy while the engine is idle switches the engine to it" {
    fake_step 7 0
    fake_task 7 0 0 a
    serve_start --policy gang
    run cs_register 7 0 "$a" policy=tft
    [[ $output =~ ^OK\ id=1\ policy=tft$ ]] || { echo "register: $output" >&2; false; }
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=tft"
    assert_contains "$(cat engine.log)" "policy tft now (asked by step 7.0; the engine was idle)"
    assert_equal "$(step_field 7.0 policy) $(step_field 7.0 asked_policy)" "tft tft" "policy, asked_policy"
}

@test "a step asking for another policy while steps run is co-scheduled under the running one; status shows both" {
    fake_steps 7:a 8:b
    serve_start --policy gang --quantum 300ms
    registered 7 0 "$a"
    run cs_register 8 0 "$b" policy=tft
    [[ $output =~ ^OK\ id=2\ policy=gang$ ]] || { echo "register: $output" >&2; false; }
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    assert_equal "$(step_field 8.0 policy) $(step_field 8.0 asked_policy)" "gang tft" "policy, asked_policy of 8.0"
    assert_contains "$("$COSCHED" status --socket "$SOCK")" "gang/asked:tft"
    assert_contains "$(cat engine.log)" "step 8.0 asked for policy tft; co-scheduled under gang"
    gang_turns
}

# ------------------------------------------------------------------ 8. environment

@test "cosched serve clears its environment: COSCHED_DATADIR and COSCHED_POLICY_PATH are ignored" {
    mkdir -m 755 evil
    cat > evil/evil.lua <<'EOF'
return { api = 1, name = "evil", description = "must never load in the root engine",
  plan = function(snap) return { { jobs = {} } } end }
EOF
    cp evil/evil.lua evil/gang.lua
    fake_step 7 0
    fake_task 7 0 0 a
    SERVE_ENV=(COSCHED_DATADIR=/nonexistent COSCHED_POLICY_PATH="$BATS_TEST_TMPDIR/evil" LUA_PATH="$BATS_TEST_TMPDIR/evil/?.lua")
    serve_start --policy gang
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    run cs_register 7 0 "$a" policy=evil
    assert_contains "$output" "ERR policy 'evil' is not installed on this node"
    # the source tree's policies load (COSCHED_DATADIR=/nonexistent would hide them)
    registered 7 0 "$a" policy=tft
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=tft"
}

# ------------------------------------------------------------------ 9. --detach

@test "--detach returns once the socket listens; the daemon runs in its own session; a second one exits 0 at once" {
    run "$COSCHED" serve --detach --socket "$SOCK" --log "$BATS_TEST_TMPDIR/daemon.log" --policy gang \
        --quantum 100ms --counters none 3>&-
    [ "$status" -eq 0 ] || { echo "serve --detach: status $status: $output" >&2; false; }
    [ -S "$SOCK" ]
    # no waiting: it listens as soon as --detach returned
    run cs_send 'COSCHED/1 ping'
    [[ $output =~ ^OK\ version=1\ pid=([0-9]+)\ policy=gang$ ]] || { echo "ping: $output" >&2; false; }
    d=${BASH_REMATCH[1]}
    echo "$d" > daemon.pid
    _cs_stat "/proc/$d/stat"
    assert_equal "${_CS_F[3]}" "$d" "session of the daemon"
    [ "${_CS_F[1]}" != $$ ]
    assert_contains "$(cat daemon.log)" "node engine pid $d listening on $SOCK"
    # a second engine on the same socket: nothing to do, exit 0 (--detach) or 1
    run "$COSCHED" serve --detach --socket "$SOCK" --policy gang 3>&-
    [ "$status" -eq 0 ]
    assert_contains "$output" "an engine already serves $SOCK"
    run "$COSCHED" serve --socket "$SOCK" --policy gang 3>&-
    [ "$status" -eq 1 ]
    assert_contains "$output" "an engine already serves $SOCK"
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$d policy=gang" "the first engine still serves"
}

@test "--detach started with stderr on /dev/null (as the SPANK plugin starts it): a start-up error is in its log" {
    # the plugin's on-demand engine has /dev/null as stderr: without the log,
    # an engine that cannot start would say why to nobody
    "$COSCHED" serve --detach --socket "$SOCK" --policy nosuch --quantum 100ms --counters none 2>/dev/null 3>&- &&
        { echo "serve --detach with an unknown policy succeeded" >&2; false; }
    [ ! -S "$SOCK" ]
    [ -f "$SOCK.log" ] || { echo "no $SOCK.log" >&2; false; }
    assert_contains "$(cat "$SOCK.log")" "policy 'nosuch' is not installed on this node"
    # a good start appends to the same log, the start-up lines from before the fork included
    run "$COSCHED" serve --detach --socket "$SOCK" --policy gang --quantum 100ms --counters none 3>&-
    [ "$status" -eq 0 ] || { echo "serve --detach: status $status: $output" >&2; false; }
    run cs_send 'COSCHED/1 ping'
    [[ $output =~ pid=([0-9]+) ]] && echo "${BASH_REMATCH[1]}" > daemon.pid
    assert_contains "$(cat "$SOCK.log")" "listening on $SOCK"
    [ "$(grep -c "policy 'nosuch'" "$SOCK.log")" -eq 1 ]
}

@test "--idle-exit: the detached engine stays while a step is registered and exits after the last one left" {
    fake_step 7 0
    fake_task 7 0 0 a
    # (an idle time of 6 s: between the engine's start and the step's registration a loaded machine
    # can take seconds)
    run "$COSCHED" serve --detach --idle-exit 6s --socket "$SOCK" --log "$BATS_TEST_TMPDIR/daemon.log" \
        --policy gang --quantum 100ms --counters none 3>&-
    [ "$status" -eq 0 ]
    d=$(cs_send 'COSCHED/1 ping' | sed -n 's/.* pid=\([0-9]*\) .*/\1/p')
    [ -n "$d" ]
    echo "$d" > daemon.pid
    registered 7 0 "$a"
    # it answers for longer than the idle time while the step is registered
    up0=$(engine_field uptime)
    wait_for 30 "python3 -c 'import sys; sys.exit(not float(sys.argv[1]) >= $up0 + 7)' \$(engine_field uptime)"
    pid_alive "$d"
    kill -KILL "$a"
    wait "$a" || true
    wait_for 25 _cs_gone "$d"
    assert_contains "$(cat daemon.log)" "exiting (--idle-exit)"
    [ ! -e "$SOCK" ] || { echo "socket $SOCK left behind" >&2; false; }
}

# ------------------------------------------------------------------ 10. multi-node steps

@test "a step spanning nodes (nnodes=2) is never frozen under gang and keeps cores of its own, while the single-node steps take turns on the others" {
    fake_steps 7:a 8:b 9:c
    serve_start --policy gang --quantum 200ms
    registered 7 0 "$a" nnodes=2
    registered 8 0 "$b"
    registered 9 0 "$c"
    assert_contains "$(cat engine.log)" "step 7.0 (uid 0, ?) joined: cores $ALL, spans nodes: never frozen"
    assert_equal "$(step_field 7.0 never_frozen) $(step_field 7.0 nodes)" "true 2" "never_frozen, nodes"
    # 8.0 and 9.0 take turns (each seen frozen 3 times) while 7.0 never is frozen
    local fb=0 fc=0 n=0 A B C
    while [ $fb -lt 3 ] || [ $fc -lt 3 ] || [ $n -lt 50 ]; do
        n=$((n + 1))
        [ $n -lt 600 ] || { echo "8.0 frozen $fb and 9.0 $fc times in $n looks" >&2; false; }
        A=$(step_frozen 7 0) B=$(step_frozen 8 0) C=$(step_frozen 9 0)
        assert_equal "$A" 0 "frozen of 7.0 (nnodes=2), look $n"
        [ "$B" = 1 ] && fb=$((fb + 1))
        [ "$C" = 1 ] && fc=$((fc + 1))
        sleep 0.03
    done
    assert_equal "$(thread_states "$a")" R "thread states of 7.0"
    # 7.0 keeps cores of its own (cosched.never_frozen): gang's turns are on the others
    if [ "$NCPU" -gt 1 ]; then
        wait_for 10 'disjoint "$(task_cpus "$a")" "$(task_cpus "$b")" && disjoint "$(task_cpus "$a")" "$(task_cpus "$c")"' ||
            { echo "7.0 on $(task_cpus "$a"), 8.0 on $(task_cpus "$b"), 9.0 on $(task_cpus "$c")" >&2; false; }
        for n in 1 2 3 4 5; do
            A=$(task_cpus "$a") B=$(task_cpus "$b") C=$(task_cpus "$c")
            disjoint "$A" "$B" && disjoint "$A" "$C" ||
                { echo "look $n: 7.0 on $A, 8.0 on $B, 9.0 on $C" >&2; false; }
            sleep 0.1
        done
    fi
}

@test "two steps spanning nodes share the cores they keep; the engine takes the plan (no fallback), the one-node step runs on the rest" {
    [ "$NCPU" -gt 1 ] || skip "needs 2 cpus"
    fake_steps 7:a 8:b 9:c
    serve_start --policy tft --quantum 200ms
    registered 7 0 "$a" nnodes=2
    registered 9 0 "$c" nnodes=2
    registered 8 0 "$b"
    wait_for 10 '[ "$(task_cpus "$a")" = "$(task_cpus "$c")" ] && disjoint "$(task_cpus "$a")" "$(task_cpus "$b")"' ||
        { echo "7.0 on $(task_cpus "$a"), 9.0 on $(task_cpus "$c"), 8.0 on $(task_cpus "$b")" >&2; cat engine.log >&2; false; }
    assert_equal "$(step_frozen 7 0)$(step_frozen 9 0)$(step_frozen 8 0)" 000 "frozen of 7.0, 9.0, 8.0"
    if grep -E "plan\(\) failed|fallback|is also given to job" engine.log; then false; fi
}

# ------------------------------------------------------------------ 11. bad options

@test "bad options: one clear message, exit 2, no socket, no engine" {
    local -a cases=(
        "--bogus"              "unknown option '--bogus' (see cosched serve --help)"
        "--quantum 0"          "--quantum '0': expected a duration from 10ms to 60s"
        "--quantum 2h"         "--quantum '2h': expected a duration from 10ms to 60s"
        "--idle-exit soon"     "--idle-exit soon: expected a duration"
        "--counters likwid"    "--counters likwid: the node engine takes auto or none"
        "extra"                "cosched serve takes no arguments ('extra')"
        "--policy"             "option --policy needs an argument"
    )
    for ((i = 0; i < ${#cases[@]}; i += 2)); do
        run "$COSCHED" serve --socket "$SOCK" ${cases[i]}
        [ "$status" -eq 2 ] || { echo "serve ${cases[i]}: status $status: $output" >&2; false; }
        assert_contains "$output" "${cases[i + 1]}" "message for ${cases[i]}"
        [ "${#lines[@]}" -eq 1 ] || { echo "serve ${cases[i]}: want one line, got: $output" >&2; false; }
        [ ! -e "$SOCK" ] && [ ! -e "$SOCK.lock" ] || { echo "serve ${cases[i]}: left $(ls "$SOCKDIR")" >&2; false; }
    done
    run "$COSCHED" serve --socket "$SOCK" --policy nosuch
    [ "$status" -eq 2 ]
    assert_contains "$output" "--policy: policy 'nosuch' is not installed on this node"
    [ ! -e "$SOCK" ]
    no_cosched_process
}

@test "the systemd unit: systemd verifies it; its ExecStart, with the sample site defaults, starts an engine that serves" {
    command -v systemd-analyze > /dev/null || skip "no systemd-analyze here"
    # what make installs: every placeholder filled in
    local built=$COSCHED_BUILDDIR/share/cosched-engine.service
    [ -s "$built" ] || { echo "make did not build $built"; false; }
    if grep -n '@[a-z]*@' "$built"; then echo "placeholders left in $built"; false; fi
    grep -q '^ExecStart=/[^ ]*/cosched serve ' "$built" || { grep ExecStart "$built"; false; }
    # the same .in with this build's paths, verified and run
    mkdir -p etc/default
    sed -e "s|@bindir@|$COSCHED_BUILDDIR|g" -e "s|@sysconfdir@|$PWD/etc|g" -e "s|@pkgdatadir@|$COSCHED_SRCDIR/share|g" \
        "$COSCHED_SRCDIR/share/cosched-engine.service.in" > cosched-engine.service
    run systemd-analyze verify --man=no "$PWD/cosched-engine.service"
    [ "$status" -eq 0 ] || { echo "systemd-analyze verify: $output"; false; }
    grep -q "^EnvironmentFile=-$PWD/etc/default/cosched-engine$" cosched-engine.service
    # a site's defaults: the sample with its lines uncommented and a policy changed
    sed -e 's/^#\(COSCHED_[A-Z_]*=\)/\1/' -e 's/^COSCHED_POLICY=.*/COSCHED_POLICY=gang/' \
        "$COSCHED_SRCDIR/share/cosched-engine.default" > etc/default/cosched-engine
    grep -q '^COSCHED_OPTS=--kill-grace' etc/default/cosched-engine
    # systemd's expansion: Environment= first, the EnvironmentFile over it,
    # ${V} as one word, $V split on blanks; our socket instead of /run's
    local line cmd
    line=$(sed -n 's/^ExecStart=//p' cosched-engine.service)
    cmd=$(env -i bash -c '
        eval "$(sed -n "s/^Environment=//p" "$1" | tr " " "\n")"
        while IFS= read -r kv; do [[ $kv =~ ^[A-Z_]+= ]] && export "$kv"; done < "$2"
        eval "echo $3"' _ cosched-engine.service etc/default/cosched-engine "$line")
    cmd=${cmd//\/run\/cosched\/engine.sock/$SOCK}
    [ "$cmd" = "$COSCHED_BUILDDIR/cosched serve --socket $SOCK --policy gang --quantum 1s --kill-grace 60s" ] ||
        { echo "ExecStart expands to: $cmd"; false; }
    $cmd --counters none 2> engine.log 3>&- &
    ENGINE=$!
    wait_for 10 "cs_send 'COSCHED/1 ping' | grep -q '^OK '" || { cat engine.log; false; }
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
}

@test "cosched serve as a non-root user is refused with the reason, exit 2, nothing created" {
    run runuser -u nobody -- "$COSCHED" serve --socket "$SOCK" --policy gang
    [ "$status" -eq 2 ]
    assert_contains "$output" "cosched serve must run as root"
    [ "${#lines[@]}" -eq 1 ]
    [ -z "$(ls -A "$SOCKDIR")" ] || { echo "left in $SOCKDIR: $(ls -A "$SOCKDIR")" >&2; false; }
    no_cosched_process
}

@test "status shows what the ageing policy says of each step: class, age and its terms, selected this epoch" {
    fake_step 7 0; fake_step 8 0; fake_step 9 0
    fake_task 7 0 0 a; fake_task 8 0 0 b; fake_task 9 0 0 c
    serve_start --policy flca --quantum 200ms
    local p
    for p in "7 $a" "8 $b" "9 $c"; do
        set -- $p
        run cs_register "$1" 0 "$2" class=S
        [[ "$output" == OK* ]]
    done
    # jobs being characterized say only that; wait until all three are scheduled by age
    wait_for 20 'status_json | python3 -c "import json,sys; sys.exit(not all(s[\"policy_info\"] and \"age\" in s[\"policy_info\"] for s in json.load(sys.stdin)[\"steps\"]))"'
    run status_json
    [ "$status" -eq 0 ]
    echo "$output" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert len(d["steps"]) == 3, d
for s in d["steps"]:
    i = s["policy_info"]
    assert i is not None, s
    assert i["class"] == "S", i
    # under flca's default ageing = progress the age is what the job is owed, FOP's terms beside
    # it for reference (tests/lua/test_policies.lua checks age = wt + cp + fp under ageing = fop);
    # printed with 6 significant digits
    assert "owed" in i and abs(i["age"] - i["owed"]) < 1e-5 * max(1, abs(i["age"])), i
    assert all(k in i for k in ("wt", "cp", "fp")), i
    assert isinstance(i["selected"], bool), i
    # frozen now means: not selected by this epoch plan, or selected for a later step
    assert s["state"] != "frozen" or "waiting for its turn" in s["reason"], s
'
}
