#!/usr/bin/env bats
# 62-slurm-engine: the real node engine (`cosched serve`, started on demand by
# the real SPANK plugin) co-scheduling steps of a real Slurm 22.05.  What is
# asserted is what the kernel and Slurm report: Slurm's step freezer and
# cpuset files, /proc, squeue/scontrol/sinfo - never only what cosched says.

load helpers/common
load helpers/slurm

setup_file() {
    slurm_start
}

teardown_file() {
    slurm_stop
}

setup() {
    slurm_test_setup start=ondemand quantum_ms=200 idle_exit=3
    BG=
}

teardown() {
    slurm_test_teardown
}

# freezer state of step S of job J
fstate() {
    cat "$CGROUP_ROOT/freezer/slurm_$SLURM_NODE/uid_0/job_$1/step_$2/freezer.state" 2>/dev/null || echo GONE
}

# fstates J: "S0 S1", the freezer states of steps 0 and 1 of job J read by one
# process back to back (GONE for a step whose cgroup is gone).  Two
# $(fstate) reads are two forks apart: beside two CPU-bound processes and a
# second test run (make check LOAD=1 in two clones at once) 5 of 39 such
# looks spanned a 0.2 s switch and saw both steps thawed, though the engine
# freezes the leaving step before it thaws the next.
fstates() {
    local d=$CGROUP_ROOT/freezer/slurm_$SLURM_NODE/uid_0/job_$1 s x out=()
    for s in 0 1; do
        read -r x 2>/dev/null < "$d/step_$s/freezer.state" || x=GONE
        out+=("$x")
    done
    echo "${out[*]}"
}

# stays_frozen J S N WHEN: step J.S's freezer reads FROZEN at each of N
# samples 0.2 s apart (WHEN says which moment, on failure)
stays_frozen() {
    local i s
    for i in $(seq 1 "$3"); do
        s=$(fstate "$1" "$2")
        [ "$s" = FROZEN ] || { echo "$4, sample $i: step $1.$2 $s" >&2; return 1; }
        sleep 0.2
    done
}

cpuset_of() {
    cat "$CGROUP_ROOT/cpuset/slurm_$SLURM_NODE/uid_0/job_$1/step_$2/cpuset.cpus" 2>/dev/null || echo GONE
}

# cpus_apart LIST LIST: two cpu lists ("0-1,3"), both non-empty, share no cpu
cpus_apart() {
    [[ $1 =~ ^[0-9] && $2 =~ ^[0-9] ]] && disjoint "$1" "$2"
}

# start_steps POLICY CMD0 CMD1: an allocation of both cpus running two
# overlapping steps of one task on both cpus (CMD0 0.3 s before CMD1, each
# quoted for the allocation's shell) under POLICY, in the background; sets
# JOB and BG.
start_steps() {
    salloc -n1 -c2 --cosched="$1" bash -c "
        srun --overlap -n1 -c2 $2 > step0.out 2> step0.err &
        sleep 0.3
        srun --overlap -n1 -c2 $3 > step1.out 2> step1.err &
        wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 20 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
}

# start_pair POLICY SECONDS: start_steps with two spins (2 threads, SECONDS of
# CPU time each), once both are registered with the engine.
start_pair() {
    start_steps "$1" "'$PROGS/spin' -t 2 -c $2 -w 120" "'$PROGS/spin' -t 2 -c $2 -w 120"
    wait_for 20 '[ "$(fstate $JOB 1)" != GONE ]'
    wait_for 20 '"$COSCHED" status --socket "$CS_SOCKET" | grep -q "$JOB.1"'
}

@test "gang under Slurm: two steps share the node, exactly one runs at a time (Slurm's step freezers say so)" {
    start_pair gang 8
    wait_for 5 '"$COSCHED" status --socket "$CS_SOCKET" > st.txt; grep -Eq "frozen .*waiting for its turn: policy gang runs $JOB\.[01]" st.txt'
    cat st.txt
    grep -q "^$JOB.0 .* gang " st.txt
    grep -q "^$JOB.1 .* gang " st.txt
    local both=0 one=0 s0 s1
    for i in $(seq 40); do
        read -r s0 s1 < <(fstates "$JOB")
        [ "$s0" = GONE ] || [ "$s1" = GONE ] && break
        # (side by side, another run's engine thaws our frozen step at its start: not counted)
        if [ "$s0" = THAWED ] && [ "$s1" = THAWED ] && ! foreign_cosched; then both=$((both + 1)); fi
        [ "$s0" = FROZEN ] || [ "$s1" = FROZEN ] && one=$((one + 1))
        sleep 0.05
    done
    echo "samples with both thawed: $both, with one frozen: $one"
    [ "$one" -ge 10 ]
    # a switch may be caught half done now and then, never for long
    [ "$both" -le 4 ]
    wait "$BG"; BG=
    cat salloc.err step0.err step1.err
    if grep 'cosched:' step0.err step1.err; then false; fi   # no notice: both were co-scheduled
    # the job's steps were frozen in turns, the job never all at once: its
    # AdminComment says so, written before its last step's end reached Slurm
    scontrol -o show job "$JOB" | grep -o 'AdminComment=[^ ]*' | tee adm.txt
    grep -Eq '^AdminComment=cosched:held_s=[0-9]+,frozen_s=[1-9]' adm.txt
    slurm_node_ok
    # nothing stays frozen or confined: the steps are gone with their cgroups
    [ "$(fstate "$JOB" 0)" = GONE ]
}

@test "tft under Slurm: the two steps are folded onto disjoint halves of the allocation (step cpusets and /proc)" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    start_pair tft 3
    wait_for 10 '[ "$(cpuset_of $JOB 0)" != "$(cpuset_of $JOB 1)" ] && [ "$(cpuset_of $JOB 0 | tr -d 0-9)" = "" ]'
    local c0 c1 p0
    c0=$(cpuset_of "$JOB" 0) c1=$(cpuset_of "$JOB" 1)
    echo "step 0: $c0, step 1: $c1"
    [ "$c0" != "$c1" ]
    [ "$(fstate "$JOB" 0)" = THAWED ]
    [ "$(fstate "$JOB" 1)" = THAWED ]
    # the task itself is bound there (kernel's view)
    p0=$(head -1 "$CGROUP_ROOT/cpuset/slurm_$SLURM_NODE/uid_0/job_$JOB/step_0/cgroup.procs")
    grep Cpus_allowed_list "/proc/$p0/status"
    [ "$(awk '/Cpus_allowed_list/ {print $2}' "/proc/$p0/status")" = "$c0" ]
    wait "$BG"; BG=
    slurm_node_ok
}

# task_pids J S: the pids of step J.S's tasks (its freezer cgroup holds only them)
task_pids() {
    cat "$CGROUP_ROOT/freezer/slurm_$SLURM_NODE/uid_0/job_$1/step_$2/cgroup.procs" 2>/dev/null || true
}

# bindings P...: the CPUs of each process, sorted, one line ("0 1")
bindings() {
    local p
    for p in "$@"; do task_cpus "$p" | tr '\n' ' '; echo; done | sort | tr '\n' ' ' | sed 's/ *$//; s/  */ /g'
}

@test "srun --cpu-bind=map_cpu:0,1 under tft: each task back on its own CPU once its step holds the node again" {
    # The engine keeps a task's own binding across its moves (launcher/control/binds.c).
    # On this kernel (>= 6.2) a v1 cpuset write keeps the binding by itself;
    # the engine's part is what fails without the fix in 61-serve's test
    # (affinity path).  Here: that Slurm's binding and the engine's moves agree
    # for real - Slurm binds after the task registered, the task is folded with
    # its binding outside its CPU, and gets it back.
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    salloc -n2 --cosched=tft bash -c "
        srun --overlap -n2 --cpu-bind=map_cpu:0,1 '$PROGS/spin' -t 2 -c 6 -w 120 > step0.out 2> step0.err &
        sleep 0.3
        srun --overlap -n1 -c2 '$PROGS/spin' -t 2 -c 1.5 -w 60 > step1.out 2> step1.err &
        wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 20 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
    # folded beside step 1: step 0 on one CPU, both its tasks there
    wait_for 20 '[ "$(cpuset_of $JOB 1)" != GONE ] && [ "$(cpuset_of $JOB 0 | tr -d 0-9)" = "" ]'
    local p c
    wait_for 10 '[ "$(task_pids "$JOB" 0 | wc -l)" = 2 ]'
    p=($(task_pids "$JOB" 0))
    c=$(cpuset_of "$JOB" 0)
    [ "$c" = GONE ] || [ "$(bindings "${p[@]}")" = "$c $c" ] ||
        { echo "folded on $c, the tasks are on: $(bindings "${p[@]}")" >&2; false; }
    # step 1 ends: step 0 is given both CPUs, and each task its own again
    wait_for 30 '[ "$(cpuset_of $JOB 1)" = GONE ] && [ "$(cpuset_of $JOB 0)" = 0-1 ]'
    wait_for 5 '[ "$(bindings "${p[@]}")" = "0 1" ]' ||
        { echo "the two tasks are on: $(bindings "${p[@]}") (want one on 0, the other on 1)" >&2; false; }
    wait "$BG"; BG=
    cat salloc.err step0.err step1.err
    if grep -i 'error\|cosched:' step0.err step1.err; then false; fi
    slurm_node_ok
}

@test "scancel of a job whose step is frozen: Slurm kills it, the node stays up, no process is left" {
    start_pair gang 30
    wait_for 10 '[ "$(fstate $JOB 0)" = FROZEN ] || [ "$(fstate $JOB 1)" = FROZEN ]'
    local pids
    pids=$(cat "$CGROUP_ROOT"/freezer/slurm_"$SLURM_NODE"/uid_0/job_"$JOB"/step_*/cgroup.procs)
    scancel "$JOB"
    slurm_wait_gone "$JOB" 30
    wait "$BG" || true; BG=
    for p in $pids; do if pid_alive "$p"; then echo "pid $p of the cancelled job is alive"; false; fi; done
    slurm_node_ok
}

# Slurm's kill (scancel, a time limit) sends SIGCONT, which thaws the step,
# then SIGTERM and, KillWait later, SIGKILL.  A step that takes its SIGTERM
# at once shows no pending signal: the engine must see the kill from Slurm's
# write of the step freezer, and freeze neither step while they checkpoint.
@test "scancel: steps that checkpoint on SIGTERM are never frozen again during Slurm's grace period" {
    start_steps gang "python3 '$HELPERS/checkpoint.py' '$PWD/ck0' 1.0" "python3 '$HELPERS/checkpoint.py' '$PWD/ck1' 1.0"
    wait_for 20 '[ "$(fstate $JOB 1)" != GONE ]'
    wait_for 20 '"$COSCHED" status --socket "$CS_SOCKET" | grep -q "$JOB.1"'
    wait_for 20 'grep -q ready ck0 2>/dev/null && grep -q ready ck1 2>/dev/null'
    wait_for 10 '[ "$(fstate $JOB 0)" = FROZEN ] || [ "$(fstate $JOB 1)" = FROZEN ]'
    scancel "$JOB"
    # from the moment both steps have taken SIGTERM (after Slurm's SIGCONT)
    wait_for 20 'grep -q term ck0 2>/dev/null && grep -q term ck1 2>/dev/null'
    local i frozen=0 x
    for i in $(seq 1 100); do
        x=$(fstates "$JOB")
        case $x in *FROZEN*|*FREEZING*) frozen=$((frozen + 1)); echo "frozen during the grace period: $x" ;; esac
        [ "$x" = "GONE GONE" ] && break
        sleep 0.05
    done
    slurm_wait_gone "$JOB" 30
    wait "$BG" || true; BG=
    echo "step 0: $(tr '\n' ' ' < ck0); step 1: $(tr '\n' ' ' < ck1)"
    grep -h "Slurm wrote\|being killed" "$CS_SOCKET.log" 2>/dev/null || true
    [ "$frozen" -eq 0 ]
    slurm_node_ok
}

@test "the engine killed with SIGKILL while a step is frozen: its guardian thaws it and the job completes" {
    start_pair gang 2
    wait_for 10 '[ "$(fstate $JOB 0)" = FROZEN ] || [ "$(fstate $JOB 1)" = FROZEN ]'
    local p
    p=$(slurm_engine_pid)
    [ -n "$p" ]
    kill -9 "$p"
    wait_for 5 '[ "$(fstate $JOB 0)" != FROZEN ] && [ "$(fstate $JOB 1)" != FROZEN ]'
    wait "$BG"; BG=
    # salloc has returned; on a busy machine slurmctld may still be completing the job
    wait_for 60 '[ "$(slurm_job_state "$JOB")" = COMPLETED ] || [ "$(slurm_job_state "$JOB")" = GONE ]' ||
        { echo "job $JOB: $(slurm_job_state "$JOB")" >&2; false; }
    slurm_node_ok
}

@test "the engine killed with SIGKILL: a task that pinned itself while folded gets every core of its step back" {
    # A task pinned where it runs folded (as GROMACS and LLVM's libomp do) is
    # kept there by the kernel (>= 6.2) when its cpuset grows back; the
    # guardian's rescue knows only the bindings of its record and must give
    # every other thread the step's cores.
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    start_steps tft "python3 '$HELPERS/pinself.py' hold" "'$PROGS/spin' -t 2 -c 3 -w 60"
    wait_for 30 '[ -s a.pid ]'
    local a p
    a=$(cat a.pid)
    case $(cat a.first) in *,*) echo "pinned on $(cat a.first): never folded" >&2; false ;; esac
    p=$(slurm_engine_pid)
    [ -n "$p" ]
    kill -9 "$p"
    wait_for 10 '[ "$(cpuset_of $JOB 0)" = 0-1 ]'
    wait_for 5 '[ "$(task_cpus "$a")" = 0-1 ]' ||
        { echo "step 0 on $(cpuset_of $JOB 0), the pinned task on: $(task_cpus "$a")" >&2; false; }
    scancel "$JOB"
    slurm_wait_gone "$JOB" 30
    wait "$BG" || true; BG=
    slurm_node_ok
}

@test "SIGTERM to the engine gives every step back to Slurm: thawed, on its own cores, and they complete" {
    start_pair tft 3
    wait_for 10 '[ "$(cpuset_of $JOB 0)" != "$(cpuset_of $JOB 1)" ]'
    local p
    p=$(slurm_engine_pid)
    kill "$p"
    wait_for 10 "! kill -0 $p 2>/dev/null"
    [ "$(fstate "$JOB" 0)" = THAWED ]
    [ "$(fstate "$JOB" 1)" = THAWED ]
    [ "$(cpuset_of "$JOB" 0)" = "$(cpuset_of "$JOB" 1)" ]
    wait "$BG"; BG=
    slurm_node_ok
}

@test "scontrol suspend of a co-scheduled job is neither undone nor disturbed; resume lets it finish" {
    start_pair gang 2
    scontrol suspend "$JOB"
    slurm_wait_job "$JOB" SUSPENDED 10
    local pids p s t0 t1
    pids=$(cat "$CGROUP_ROOT"/freezer/slurm_"$SLURM_NODE"/uid_0/job_"$JOB"/step_*/cgroup.procs)
    sleep 0.3
    cputicks() { local p; for p in $pids; do cat "/proc/$p/stat"; done | awk '{ s += $14 + $15 } END { print s }'; }
    t0=$(cputicks)
    sleep 1.5   # several quanta: the engine switches meanwhile, and must not let the job run
    t1=$(cputicks)
    for p in $pids; do
        s=$(awk '{print $3}' "/proc/$p/stat")
        # stopped by Slurm's SIGSTOP (T), or also held by the step freezer (D)
        echo "pid $p state $s"
        [ "$s" = T ] || [ "$s" = D ]
    done
    echo "CPU ticks of the suspended job: $t0 -> $t1"
    [ "$t1" -le "$((t0 + 2))" ]
    # the engine sees Slurm's stop at its next look at the tasks: on a loaded machine, a moment later
    wait_for 10 '"$COSCHED" status --socket "$CS_SOCKET" > st.txt; grep -q "stopped by Slurm" st.txt' || true
    cat st.txt
    grep -q "stopped by Slurm" st.txt
    scontrol resume "$JOB"
    wait "$BG"; BG=
    slurm_node_ok
}

@test "a user sees only their own steps in cosched status; root sees all" {
    start_pair gang 3
    run runuser -u nobody -- "$COSCHED" status --socket "$CS_SOCKET"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"no co-scheduled step of yours"* ]]
    run "$COSCHED" status --socket "$CS_SOCKET" --json
    echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["steps"]) == 2, d; assert all(s["user"] == "root" for s in d["steps"])'
    wait "$BG"; BG=
}

@test "the on-demand engine exits by itself once no step is left (idle_exit), and the next step starts a new one" {
    start_pair gang 1
    local p
    p=$(slurm_engine_pid)
    [ -n "$p" ]
    wait "$BG"; BG=
    wait_for 15 "! kill -0 $p 2>/dev/null"
    run srun -n1 --cosched=gang "$PROGS/spin" -c 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" != *"cosched:"* ]]
}

@test "frozen time is given back: a --time=1 job time-sliced by gang completes (limit extended, AdminComment); with extend_time=no a job is killed at its limit" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    # job A: 60 CPU-s (30 s of both cores; 60 s on a machine busy with
    # others); job B, started under extend_time=no, 140 CPU-s: side by side
    # under gang each is frozen about half the time, A's wall time nears or
    # passes its limit.  A time limit is a limit of running time: A must not
    # need more than a minute of it even on a loaded machine.
    # A's name holds a time limit of its own: scontrol's free text, never
    # read for the job's limit (a user would give their job ten hours)
    sbatch -o a.out -e a.err --time=1 -n1 -c2 --cosched=gang -J "a TimeLimit=600 Partition=x" \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 60 -w 300" > a.sub
    A=$(grep -o '[0-9]*$' a.sub)
    wait_for 30 '"$COSCHED" status --socket "$CS_SOCKET" 2>/dev/null | grep -q "^$A\.0 "'
    slurm_plugstack start=ondemand quantum_ms=200 idle_exit=3 extend_time=no
    sbatch -o b.out -e b.err --time=1 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 140 -w 300" > b.sub
    B=$(grep -o '[0-9]*$' b.sub)
    wait_for 30 '"$COSCHED" status --socket "$CS_SOCKET" 2>/dev/null | grep -q "^$B\.0 "'
    "$COSCHED" status --socket "$CS_SOCKET" | tee st.txt
    # A's limit grows as soon as it is held (held seconds rounded up to
    # minutes, a minute ahead while held); B's does not
    wait_for 30 'scontrol -o show job "$A" | grep -Eq "TimeLimit=00:0[23]:00"'
    "$COSCHED" status --socket "$CS_SOCKET" --json > st.json
    python3 -c '
import json, sys
d = {"%d" % s["job"]: s for s in json.load(open("st.json"))["steps"]}
a, b = d[sys.argv[1]], d[sys.argv[2]]
assert a["job_extend_time"] is True and b["job_extend_time"] is False, (a, b)
assert a["job_given_s"] >= 60 and b["job_given_s"] == 0, (a, b)
' "$A" "$B"
    # both ended (MinJobAge keeps their records 30 s): COMPLETED and TIMEOUT
    local t=0 sa sb
    while :; do
        sa=$(slurm_job_state "$A") sb=$(slurm_job_state "$B")
        [ -s a.job ] || case $sa in RUNNING|PENDING|COMPLETING) ;; *) scontrol -o show job "$A" > a.job ;; esac
        [ -s b.job ] || case $sb in RUNNING|PENDING|COMPLETING) ;; *) scontrol -o show job "$B" > b.job ;; esac
        [ -s a.job ] && [ -s b.job ] && break
        t=$((t + 1))
        [ $t -lt 400 ] || { echo "jobs still $sa $sb after 200 s" >&2; false; }
        sleep 0.5
    done
    cat a.job b.job
    grep -q "JobState=COMPLETED" a.job
    grep -q "JobState=TIMEOUT" b.job
    grep -Eq "TimeLimit=00:0[2-4]:00" a.job
    grep -q "TimeLimit=00:01:00" b.job
    # A is held about half of its run; its script ends with its step, in
    # less than the minute between two updates on a fast machine: the
    # AdminComment holds the last word, written before Slurm saw the step end
    grep -Eq "AdminComment=cosched:held_s=([1-9][0-9]+),frozen_s=" a.job
    grep -Eq "AdminComment=cosched:held_s=[1-9][0-9]*,frozen_s=" b.job
    grep -q "CANCELLED .* DUE TO TIME LIMIT" b.err
    if grep -q "DUE TO TIME LIMIT" a.err; then false; fi
    slurm_node_ok
}

@test "an array task's time limit is extended alone: the other tasks keep theirs" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    # one task's own number is the array's: an update of it would set every
    # task's limit (the admin's 30 minutes for task 1 cut to task 0's)
    sbatch --parsable -H --array=0-1 -o /dev/null -e /dev/null --time=1 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 300 -w 300" > ar.sub
    AR=$(cat ar.sub)
    scontrol update JobId="${AR}_1" TimeLimit=30
    scontrol release "$AR"
    wait_for 30 'scontrol -o show job "${AR}_0" | grep -Eq "TimeLimit=00:0[2-4]:00"'
    wait_for 30 'scontrol -o show job "${AR}_1" | grep -Eq "TimeLimit=00:3[2-4]:00"'
    scontrol -o show job "${AR}_0" | grep -Eq "TimeLimit=00:0[2-4]:00"
    scancel "$AR"
    slurm_wait_idle 30
}

@test "scontrol suspend: a step Slurm froze stays frozen while suspended, past --kill-grace and the engine's death, and runs again after resume" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    # proctrack/cgroup suspends by freezing the step (SIGSTOP); before,
    # the engine took that write for a resume and, after --kill-grace,
    # thawed the step in its turns while Slurm held it suspended
    slurm_plugstack start=none
    slurm_engine_start --policy gang --quantum 200ms --kill-grace 1s
    sbatch -o a.out -e a.err --time=5 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 600 -w 600" > a.sub
    A=$(grep -o '[0-9]*$' a.sub)
    sbatch -o b.out -e b.err --time=5 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 600 -w 600" > b.sub
    B=$(grep -o '[0-9]*$' b.sub)
    wait_for 30 '"$COSCHED" status --socket "$CS_SOCKET" 2>/dev/null | grep -q "^$B\.0 "'
    wait_for 30 '"$COSCHED" status --socket "$CS_SOCKET" 2>/dev/null | grep -q "^$A\.0 "'
    scontrol suspend "$A"
    wait_for 30 '[ "$(slurm_job_state "$A")" = SUSPENDED ]'
    # Slurm's freeze comes after its SIGTSTP: seen by the engine
    wait_for 30 'grep -q "step $A\.0: Slurm" "$CS_SOCKET.log"'
    # four times --kill-grace, sampled: never thawed while suspended
    stays_frozen "$A" 0 20 "while Slurm holds it suspended"
    grep -q "Slurm froze it (a suspend)" "$CS_SOCKET.log"
    # the engine killed: its guardian gives B back and leaves A to Slurm, and
    # so does the next engine, from the records the dead one left (before,
    # both thawed A while Slurm held it suspended)
    kill -9 "$(slurm_engine_pid)"
    wait_for 10 '[ "$(fstate "$B" 0)" = THAWED ]'
    stays_frozen "$A" 0 5 "after the engine's death"
    slurm_engine_start --policy gang --quantum 200ms --kill-grace 1s
    stays_frozen "$A" 0 5 "after the next engine's start"
    grep -q "job_$A/step_0: Slurm holds it suspended" "$CS_SOCKET.log"
    scontrol resume "$A"
    wait_for 30 '[ "$(fstate "$A" 0)" = THAWED ]'
    scancel "$A" "$B"
    slurm_wait_idle 30
}

@test "scontrol suspend of a step running alone: the engine stopped (SIGTERM) and the next one leave it frozen until Slurm resumes it" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    # no switch ever writes a step alone: Slurm's freeze is seen once a step,
    # and a stopping engine keeps its record (before, the stop thawed it)
    slurm_plugstack start=none
    slurm_engine_start --policy gang --quantum 200ms
    sbatch -o a.out -e a.err --time=5 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 600 -w 600" > a.sub
    A=$(grep -o '[0-9]*$' a.sub)
    wait_for 30 '"$COSCHED" status --socket "$CS_SOCKET" 2>/dev/null | grep -q "^$A\.0 "'
    scontrol suspend "$A"
    wait_for 30 'grep -q "step $A\.0: Slurm froze it" "$CS_SOCKET.log"'
    slurm_engine_stop
    slurm_engine_start --policy gang --quantum 200ms
    stays_frozen "$A" 0 5 "after the engine's stop and start"
    scontrol resume "$A"
    wait_for 30 '[ "$(fstate "$A" 0)" = THAWED ]'
    scancel "$A"
    slurm_wait_idle 30
}

@test "a job whose steps run alone is never held: its time limit stays, step after step" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    # each step waits frozen for its first plan: not held time, and no
    # minute ahead for it (each new step gave the job two minutes)
    sbatch -o a.out -e a.err --time=1 -n1 -c2 --cosched=gang \
        --wrap "for i in 1 2 3 4; do srun -n1 -c2 '$PROGS/spin' -t 2 -c 0.2 || exit 1; done" > a.sub
    A=$(grep -o '[0-9]*$' a.sub)
    wait_for 120 'case $(slurm_job_state "$A") in RUNNING|PENDING|COMPLETING) false ;; esac'
    scontrol -o show job "$A" > a.job
    cat a.job a.err
    grep -q "JobState=COMPLETED" a.job
    grep -q "TimeLimit=00:01:00" a.job
    slurm_node_ok
}

AWAITING='
import json, sys
s = [x for x in json.load(open(sys.argv[1]))["steps"] if x["job"] == int(sys.argv[2])]
sys.exit(not (s and s[0]["awaiting_slurm"] and not s[0]["never_frozen"] and
              "not frozen until Slurm says how far its job" in s[0]["reason"]))'

@test "a job whose time limit is its partition's MaxTime is never frozen, from its first instant: its step runs beside the others on cores of its own, its limit kept" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    # no update can give such a job its frozen time back: time-sliced, it
    # could be killed at its limit for time cosched kept it frozen (before,
    # gang froze each of two such jobs half the time and both reached it;
    # then B was frozen in A's turns while the engine asked Slurm of B's
    # limit: here a slurmctld that answers squeue 4 s late, in the engine's
    # own mount namespace).  A has room (5 min): time-sliced as usual until
    # B is never frozen, then the only job gang schedules, on the cores B
    # does not keep.
    scontrol delete PartitionName=short 2>/dev/null || true     # a failed run's
    scontrol create PartitionName=short Nodes="$SLURM_NODE" MaxTime=1 State=UP OverSubscribe=FORCE:4
    local sq                         # the squeue beside slurmstepd's scontrol, as the engine finds it
    sq=$(cd "$SLURM_SBIN/../bin" && pwd -P)/squeue
    cp "$sq" squeue.real
    printf '#!/bin/sh\nsleep 4\nexec %s "$@"\n' "$PWD/squeue.real" > squeue.slow
    chmod 755 squeue.slow
    slurm_plugstack start=none
    unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' _ "$PWD/squeue.slow" "$sq" \
        "$COSCHED" serve --socket "$CS_SOCKET" --policy gang --quantum 200ms --counters none --detach 3>&-
    wait_for 30 '[ -n "$(slurm_engine_pid)" ]'
    sbatch -o a.out -e a.err --time=5 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 120 -w 120" > a.sub
    sbatch -H -p short -o b.out -e b.err --time=1 -n1 -c2 --cosched=gang \
        --wrap "srun -n1 -c2 '$PROGS/spin' -t 2 -c 8 -w 300" > b.sub
    A=$(grep -o '[0-9]*$' a.sub) B=$(grep -o '[0-9]*$' b.sub)
    wait_for 60 'grep -q "step $A\.0 .*joined" "$CS_SOCKET.log"'
    # both freezers, every 10 ms, from before B's step exists to B's end
    touch sampling
    (d=$CGROUP_ROOT/freezer/slurm_$SLURM_NODE/uid_0
     while [ -e sampling ]; do
         read -r x 2>/dev/null < "$d/job_$A/step_0/freezer.state" || x=-
         read -r y 2>/dev/null < "$d/job_$B/step_0/freezer.state" || y=-
         echo "$x $y"
         sleep 0.01
     done) > samples &
    BG=$!
    scontrol release "$B"
    # until the answer: said so (reason, awaiting_slurm), and not for ever (never_frozen)
    wait_for 60 '"$COSCHED" status --socket "$CS_SOCKET" --json > st.json && python3 -c "$AWAITING" st.json "$B"' ||
        { cat st.json >&2; false; }
    wait_for 60 'grep -q "step $B\.0: never frozen" "$CS_SOCKET.log"'
    wait_for 30 '"$COSCHED" status --socket "$CS_SOCKET" | tee st.txt | grep -q "time limit is at its partition.s MaxTime: never frozen"' ||
        { cat st.txt >&2; false; }
    # and cores of its own (cosched.never_frozen): gang runs A on the others,
    # never on B's (before, A ran on the whole node, beside B)
    wait_for 30 'cpus_apart "$(cpuset_of "$A" 0)" "$(cpuset_of "$B" 0)"' ||
        { echo "A on $(cpuset_of "$A" 0), B on $(cpuset_of "$B" 0)" >&2; false; }
    local i a b apart=0
    for i in 1 2 3 4 5 6 7 8 9 10; do       # until B ends (8 CPU seconds on its one CPU)
        b=$(cpuset_of "$B" 0) a=$(cpuset_of "$A" 0)
        [ "$b" = GONE ] && break
        cpus_apart "$a" "$b" || { echo "sample $i: A on $a, B on $b" >&2; false; }
        apart=$((apart + 1))
        sleep 0.2
    done
    [ "$apart" -ge 2 ] || { echo "B gone after $apart samples" >&2; false; }
    wait_for 120 'case "$(slurm_job_state "$B")" in RUNNING|PENDING|COMPLETING) false ;; esac'
    rm sampling
    wait "$BG"
    BG=
    scancel "$A"
    scontrol -o show job "$B" > b.job
    cat b.job b.err
    grep -q "JobState=COMPLETED" b.job
    grep -q "TimeLimit=00:01:00" b.job
    # B's freezer was read while it ran, and never frozen
    awk '$2 != "-"' samples | grep -q .
    awk '$2 ~ /FREEZING|FROZEN/ { print "sample " NR ": steps '"$A.0 $B.0"': " $0; bad = 1 } END { exit bad }' samples ||
        { echo "A frozen in $(grep -c '^FROZEN' samples) of $(wc -l < samples) samples" >&2; false; }
    wait_for 30 '[ "$(slurm_job_state "$A")" != RUNNING ]'
    scontrol delete PartitionName=short
    slurm_node_ok
}

# page_of P: "N INODE" of task P's OpenMP page - the number its environment
# names in COSCHED_OMP_PAGE and the inode of what that descriptor is, when it
# is the engine's memfd (the kernel's view: /proc/P/environ and /proc/P/fd/N)
page_of() {
    local n
    n=$(tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | sed -n 's/^COSCHED_OMP_PAGE=//p')
    [ -n "$n" ] && [[ $(readlink "/proc/$1/fd/$n" 2>/dev/null) == /memfd:cosched-omp-page* ]] &&
        echo "$n $(stat -L -c %i "/proc/$1/fd/$n")"
}

# page_diag JOB STEP: what the kernel, Slurm and the engine say of a step's tasks (on failure)
page_diag() {
    local p
    echo "step $2's tasks: $(task_pids "$1" "$2" | tr '\n' ' ')"
    for p in $(task_pids "$1" "$2"); do
        echo "task $p: $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null) state $(awk '/^State/ {print $2}' "/proc/$p/status" 2>/dev/null)"
        echo "  env: $(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -E '^(COSCHED|LD_PRELOAD)' | tr '\n' ' ')"
        echo "  fds: $(for f in /proc/$p/fd/*; do printf '%s->%s ' "${f##*/}" "$(readlink "$f")"; done)"
    done
    echo "freezer: $(ls "$CGROUP_ROOT/freezer/slurm_$SLURM_NODE/uid_0/job_$1" 2>&1 | tr '\n' ' ')"
    cat "$CGROUP_ROOT/freezer/slurm_$SLURM_NODE/uid_0/job_$1/step_$2/freezer.state" 2>/dev/null || true
    echo "step $2's stderr: $(cat "step$2.err" 2>/dev/null)"
    echo "salloc's stderr: $(cat salloc.err 2>/dev/null)"
    squeue -s 2>&1 || true
    grep -h "cosched\|StepId=$1.$2\|$1.$2" "$SLURM_DIR"/log/slurm* 2>/dev/null | tail -30 || true
    tail -20 "$CS_SOCKET.log" 2>/dev/null || true
}

@test "OpenMP page: a step's tasks share the engine's page (environ and fd table), whose generation moves with the step's cpus; the engine traces its regions, and no team for two tasks" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 cpus"
    requires python3
    local shim=$COSCHED_BUILDDIR/launcher/omp/libcosched-omp.so s p pages pg
    [ -f "$shim" ] || { echo "$shim is not built"; return 1; }
    unset LD_PRELOAD OMP_WAIT_POLICY COSCHED_OMP OMP_DYNAMIC OMP_PROC_BIND OMP_PLACES KMP_AFFINITY OMP_NUM_THREADS
    slurm_plugstack start=none omp_shim="$shim"
    slurm_engine_start --quantum 200ms --trace "$PWD/trace.jsonl"
    # two steps of two tasks each under tft: folded onto one cpu each, so their cpus change
    # (output files named by step id: the second srun may get step 0 on a busy machine)
    salloc -n2 -c1 --cosched=tft bash -c "
        srun --overlap -n2 -c1 -o 'step%s.out' -e 'step%s.err' '$PROGS/ompshim' -l 8 &
        sleep 0.3
        srun --overlap -n2 -c1 -o 'step%s.out' -e 'step%s.err' '$PROGS/ompshim' -l 8 &
        wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 20 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
    for s in 0 1; do
        wait_for 20 '[ "$(task_pids $JOB '$s' | wc -w)" = 2 ] && for p in $(task_pids $JOB '$s'); do page_of $p > /dev/null || exit 1; done' ||
            { page_diag "$JOB" "$s"; return 1; }
        pages=$(for p in $(task_pids "$JOB" "$s"); do page_of "$p"; done)
        echo "step $s: pages (fd inode) of its tasks: $(echo $pages)"
        assert_equal "$(awk '{print $2}' <<< "$pages" | sort -u | wc -l)" 1 "pages of step $s's two tasks"
        eval "ino$s=$(awk 'NR == 1 {print $2}' <<< "$pages")"
        read -r p < <(task_pids "$JOB" "$s")
        # step 0's page held open here: its tasks may be gone (8 s) before the generation is read
        [ "$s" = 1 ] || exec {pg}< "/proc/$p/fd/$(awk 'NR == 1 {print $1}' <<< "$pages")"
    done
    [ "$ino0" != "$ino1" ] || { echo "both steps have page $ino0"; return 1; }
    # the engine bumped the generation (struct cs_omppage: gen at offset 16; 1 at the start) when tft folded the step
    wait_for 20 '[ "$(od -An -t u8 -j 16 -N 8 /dev/fd/'$pg' | tr -d " ")" -gt 1 ]'
    exec {pg}<&-
    wait "$BG"; BG=
    cat step0.out step1.out step0.err step1.err salloc.err
    for s in 0 1; do
        assert_equal "$(grep -c ' ok$' step$s.out)" 2 "step $s's tasks' own checks"
        # the engine's word: no team for a step of two tasks on the node (each writes its own to
        # the one page: one task's team is not the step's), and its regions counted step by step
        # (at least two steps with some), never more than the tasks ran
        local ran seen
        ran=$(grep -o 'regions=[0-9]*' step$s.out | cut -d= -f2 | awk '{r += $1} END {print r}')
        seen=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    for j in d["jobs"] if d.get("type") == "step" else []:
        if j["name"] == sys.argv[2] and "omp_regions" in j:
            print(j.get("omp_team", 0), j["omp_regions"])' trace.jsonl "$JOB.$s")
        echo "step $s: the tasks ran $ran regions; the engine's (team regions) per step:" $seen
        [ -n "$seen" ]
        [ "$(awk '$1 != 0' <<< "$seen" | wc -l)" = 0 ] || { echo "a team for a step of two tasks"; return 1; }
        [ "$(awk '$2 > 0' <<< "$seen" | wc -l)" -ge 2 ]
        [ "$(awk '{r += $2} END {print r}' <<< "$seen")" -le "$ran" ]
    done
    slurm_node_ok
}
