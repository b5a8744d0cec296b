#!/usr/bin/env bats
# tests/vm/40-slurm: the node engine and the SPANK plugin under a real Slurm
# 22.05 (Debian's) with CgroupPlugin=cgroup/v2, inside the VM of
# tests/vm/vmrun (8 CPUs, 2 sockets, pure cgroup2 with cpuset).  Skips
# outside that VM: the host's hybrid cgroup mount is one Slurm's cgroup/v2
# refuses ("Hybrid mode is not supported").
#
# `make check-vm` runs it with systemd as the VM's init (tests/vm/check -s),
# as on a site's node: slurmd is the service slurmd-<node>.service, with the
# settings of Slurm's own unit (Delegate=yes, KillMode=process), cgroup.conf
# a site's default (cgroup/v2, ConstrainCores=yes), and Slurm asks systemd
# over dbus for its stepd scope.  Run without -s, Slurm runs without systemd
# or dbus (cgroup.conf IgnoreSystemd=yes, CgroupAutomount=yes; slurmd started
# in system.slice/slurmd-<node>.service by tests/helpers/slurm.bash), as in
# tests/vm/50-multinode.  Either way Slurm's tree is, Debian's build being
# one for multiple slurmd:
#   system.slice/<node>_slurmstepd.scope/job_J/step_S/{slurm,user/task_T}
# The engine freezes a step through step_S/user/cgroup.freeze and moves its
# cores with step_S/user/cpuset.cpus (launcher/control/slurm.c); what is asserted is
# what the kernel shows there - cgroup.events "frozen", cpuset.cpus and
# cpuset.cpus.effective, the tasks' threads' Cpus_allowed_list - and what
# Slurm says (squeue, sinfo), never only what cosched says.
#
# Steps run spin in bursts (spin -d) at nice 19, and states are sampled, not
# stepped through: the emulated VM's shell is slower than a quantum.
#
# The engine is started by the test (`cosched serve --detach`, as systemd
# would start it) before the steps, not on demand by the plugin: under
# emulation it takes longer to start than the plugin may wait for an
# answer (timeout_ms, at most 3 s), and the steps would run without
# co-scheduling (each told so).  Everything after the start - registration,
# freezing, moving cores, the guardian - is the same engine as on demand.

load ../helpers/common
load ../helpers/slurm

setup_file() {
    [ "${COSCHED_VM:-}" = 1 ] || return 0
    SLURM_CGROUP=v2 slurm_start
}

teardown_file() {
    slurm_stop
}

setup() {
    [ "${COSCHED_VM:-}" = 1 ] || skip "runs in the test VM only (make check-vm)"
    slurm_require
    cd "$BATS_TEST_TMPDIR"
    chmod 755 "$BATS_TEST_TMPDIR"
    slurm_plugstack start=ondemand quantum_ms=2000 timeout_ms=3000
    BG=
    engine_start
}

teardown() {
    [ -z "${BG:-}" ] || { kill "$BG" 2>/dev/null; wait "$BG" 2>/dev/null || true; }
    [ -z "${SLURM_CONF:-}" ] || { scancel -u root 2>/dev/null || true; slurm_wait_idle 60 || true; }
    stop_engine
}

engine_pid() { slurm_engine_pid; }
engine_start() { slurm_engine_start; }
stop_engine() { slurm_engine_stop; }

# user J S: step J.S's user/ cgroup (its tasks' part; slurmstepd is in slurm/)
user() { echo "$(slurm_step_dir "$1" "$2")/user"; }

# frozen J S: the kernel's frozen state of step J.S's tasks (cgroup.events), GONE without the step
frozen() { cg_frozen "$(user "$1" "$2")"; echo "$X"; }

# step_cpus J S: the cores step J.S may use: as the kernel has them, the
# nearest cpuset.cpus.effective from the step's user/ group up to its job's
# group; where Slurm made no cpuset there (26.05 in this VM binds the tasks
# with task/affinity only), as Slurm has them (scontrol -d show job's
# CPU_IDs on this node)
step_cpus() {
    local d=$(user "$1" "$2") ids
    for d in "$d" "${d%/user}" "${d%/step_*/user}"; do
        [ -r "$d/cpuset.cpus.effective" ] && { cat "$d/cpuset.cpus.effective"; return; }
    done
    ids=$(scontrol -d show job "$1" 2>/dev/null | grep -o 'CPU_IDs=[^ ]*' | head -1)
    [ -n "$ids" ] && { echo "${ids#CPU_IDs=}"; return; }
    echo "no cpuset.cpus.effective from $(user "$1" "$2") up to its job's group, nor CPU_IDs from scontrol" >&2
    return 1
}

# cg_frozen DIR: sets X to the frozen state in DIR/cgroup.events (1 or 0),
# GONE when DIR is gone, read by the shell itself (no fork).
cg_frozen() {
    local k v
    X=GONE
    { while read -r k v; do [ "$k" = frozen ] && X=$v; done < "$1/cgroup.events"; } 2>/dev/null
}

# pair_frozen DIR0 DIR1: sets FZ to both groups' states read back to back: a
# look made of forks spans a 2 s quantum in the emulated VM beside a busy host
# (each look of the gang test straddled a switch for 60 looks).
pair_frozen() {
    cg_frozen "$1"; FZ=$X
    cg_frozen "$2"; FZ+=$X
}

# thread_cpus PID: sets TH to the distinct Cpus_allowed_list values of PID's
# threads (one value when they agree), without a fork
thread_cpus() {
    local f k v
    TH=
    for f in /proc/"$1"/task/*/status; do
        { while read -r k v; do
            [ "$k" = Cpus_allowed_list: ] || continue
            [[ " $TH " == *" $v "* ]] || TH+="${TH:+ }$v"
            break
        done < "$f"; } 2>/dev/null
    done
}

# tasks J S: the pids of step J.S's tasks (user/task_*/cgroup.procs)
tasks() { cat "$(user "$1" "$2")"/task_*/cgroup.procs 2>/dev/null || true; }

# start_steps POLICY CPUS N [SPIN ARGS]: an allocation of CPUS cpus on the node
# with N overlapping steps of CPUS cpus each (spin, 2 threads, in bursts) under
# --cosched=POLICY, in the background; sets JOB and BG; waits until every
# step's first task is registered with the engine and Slurm has told the
# engine how far the job's limit may grow (until then its steps are never
# frozen and keep cores of their own: cosched-policy(7)).
start_steps() {
    local pol=$1 cpus=$2 n=$3 i script=
    shift 3
    for ((i = 0; i < n; i++)); do
        script+="srun --overlap -n1 -c$cpus nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 300 $* > step$i.out 2> step$i.err &
        sleep 0.5
        "
    done
    salloc -n1 -c"$cpus" --cosched="$pol" bash -c "$script wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 60 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
    for ((i = 0; i < n; i++)); do
        wait_for 90 '[ -n "$(tasks $JOB '$i')" ]' || { cat salloc.err step*.err >&2; false; }
        wait_for 60 '"$COSCHED" status --socket "$CS_SOCKET" | grep -q "^$JOB.'$i' "' ||
            { cat salloc.err step*.err >&2; "$COSCHED" status --socket "$CS_SOCKET" >&2; false; }
    done
    wait_for 60 none_awaiting || { cat st.json >&2; false; }
}

# none_awaiting: no step waits for Slurm's answer on its job's limit (st.json)
none_awaiting() {
    "$COSCHED" status --socket "$CS_SOCKET" --json > st.json && python3 -c '
import json, sys
sys.exit(any(s.get("awaiting_slurm") for s in json.load(open(sys.argv[1]))["steps"]))' st.json
}

@test "Slurm with cgroup/v2 here: a task sits in job_J (or SLUID)/step_S/user/task_* of the node's stepd scope, on its step's cores" {
    run srun -n1 -c2 cat /proc/self/cgroup /proc/self/status
    echo "$output"
    [ "$status" -eq 0 ]
    # (Slurm 22.05 leaves the task in task_special, the group of a step's
    # processes it has no task id for)
    # (26.05 names the job's directory by its SLUID: s and 13 base32 characters)
    [[ $output =~ 0::/system.slice/${SLURM_NODE}_slurmstepd.scope/(job_[0-9]+|s[0-9A-Z]{13})/step_0/user/task_[a-z0-9]+ ]] ||
        { echo "the task's cgroup is not Slurm's cgroup/v2 layout (want 0::/system.slice/${SLURM_NODE}_slurmstepd.scope/job_J or SLUID/step_0/user/task_*)" >&2; false; }
    # two cpus of the eight (ConstrainCores=yes: the step's cpuset)
    [[ $output =~ Cpus_allowed_list:[[:space:]]+([0-9,-]+) ]]
    local cpus=${BASH_REMATCH[1]}
    [ "$(cpu_count "$cpus")" = 2 ] || { echo "the task may run on $cpus, want 2 cpus" >&2; false; }
    slurm_under_systemd || return 0
    # systemd runs the VM: slurmd is its service, and the stepd scope is a
    # unit systemd made at Slurm's request, holding the step (systemd says so)
    run systemctl show -p ActiveState -p ControlGroup -p MainPID "slurmd-$SLURM_NODE.service"
    echo "$output"
    [[ $output == *ActiveState=active* && $output == *ControlGroup=/system.slice/slurmd-$SLURM_NODE.service* ]]
    [[ $output =~ MainPID=([0-9]+) ]]
    [ "$(cat /proc/${BASH_REMATCH[1]}/comm)" = slurmd ]
    run systemctl show -p ActiveState -p ControlGroup "${SLURM_NODE}_slurmstepd.scope"
    echo "$output"
    [[ $output == *ActiveState=active* && $output == *ControlGroup=/system.slice/${SLURM_NODE}_slurmstepd.scope* ]]
}

# Sampled like tests/vm/20-cgroup2's gang: a sample counts only when both
# steps' cgroup.events read the same twice, back to back.  The tasks' own
# CPUs are read apart from that: gang moves no cores, so each step's task
# keeps its step's cores whether it runs or is frozen.  (Read between the
# two looks, they made one look last about a quantum on a slow emulating
# host - 1.6-2.2 s of the 2 s quantum, traced - and almost no sample
# counted.)
# The scancel of a job whose step is frozen comes at the end of the gang test,
# on its allocation (an allocation costs about a minute under emulation).
@test "gang under Slurm cgroup/v2: one step frozen by step_S/user/cgroup.freeze at a time, both ways round; scancel then leaves nothing frozen or alive" {
    start_steps gang 4 2
    local s1 s2 n=0 seen0=0 seen1=0 run th seq= pids p d u0 u1 effs tpid
    # what a look compares with, found once (gang moves no cores, a step keeps its first task)
    u0=$(user "$JOB" 0) u1=$(user "$JOB" 1)
    effs=("$(step_cpus "$JOB" 0)" "$(step_cpus "$JOB" 1)")
    tpid=("$(tasks "$JOB" 0 | head -n 1)" "$(tasks "$JOB" 1 | head -n 1)")
    while [ $n -lt 60 ] && { [ $seen0 -eq 0 ] || [ $seen1 -eq 0 ]; }; do
        n=$((n + 1))
        sleep "0.$((2 + RANDOM % 5))"   # not in step with the quantum
        pair_frozen "$u0" "$u1"; s1=$FZ
        pair_frozen "$u0" "$u1"; s2=$FZ
        seq+="$s1 "
        # every step on its whole allocation, frozen or running (gang moves no cores)
        for run in 0 1; do
            thread_cpus "${tpid[$run]}"; th=$TH
            [ -z "$th" ] && continue        # the task is gone (read as GONE below)
            assert_equal "$th" "${effs[$run]}" "Cpus_allowed_list of step $JOB.$run's task ${tpid[$run]} vs its user/cpuset.cpus.effective"
            assert_equal "$(cpu_count "${effs[$run]}")" 4 "cpus of step $JOB.$run (${effs[$run]})"
        done
        [ "$s1" = "$s2" ] || continue
        case $s1 in
        10|01) [ "$s1" = 10 ] && seen0=1 || seen1=1 ;;
        11) ;;      # a switch in progress
        00) # both running: only where the engine said a step did not freeze in
            # time (a crowded runqueue on a busy host: thawed, left running
            # for that step, cosched(1)), never silently
            if [ $((seen0 + seen1)) -gt 0 ] && ! grep -q 'not frozen after' "$CS_SOCKET.log" 2>/dev/null; then
                echo "sample $n: both steps running at once under gang" >&2; false
            fi ;;
        *GONE*) echo "sample $n: a step is gone: $s1" >&2; cat salloc.err step*.err >&2; false ;;
        esac
    done
    [ $seen0 -eq 1 ] && [ $seen1 -eq 1 ] ||
        { echo "after $n samples: step 0 seen frozen: $seen0, step 1: $seen1 (want both); samples: $seq" >&2
          "$COSCHED" status --socket "$CS_SOCKET" >&2; tail -n 20 "$CS_SOCKET.log" >&2; false; }
    "$COSCHED" status --socket "$CS_SOCKET" | tee st.txt
    grep -Eq "^$JOB\.[01] .*frozen" st.txt

    # scancel of the job while a step is frozen: Slurm kills it, the node
    # stays up, nothing is left frozen or alive
    wait_for 60 '[ "$(frozen $JOB 0)" = 1 ] || [ "$(frozen $JOB 1)" = 1 ]'
    pids=$(tasks "$JOB" 0; tasks "$JOB" 1)
    [ -n "$pids" ]
    scancel "$JOB"
    slurm_wait_gone "$JOB" 60
    wait "$BG" || true; BG=
    if grep 'cosched:' step0.err step1.err; then false; fi   # both were co-scheduled, nobody was told otherwise
    for p in $pids; do if pid_alive "$p"; then echo "pid $p of the cancelled job is alive" >&2; false; fi; done
    # Slurm removed the job's cgroups; whatever of its node's tree is left is not frozen
    wait_for 30 '[ ! -d "$(slurm_step_dir $JOB 0)" ] && [ ! -d "$(slurm_step_dir $JOB 1)" ]'
    for d in $(slurm_step_cgroups); do
        [ ! -f "$d/cgroup.freeze" ] || assert_equal "$(cat "$d/cgroup.freeze")" 0 "$d/cgroup.freeze"
    done
    slurm_node_ok
}

# cpu_count LIST: the number of cpus in a cpu list ("0-3,6" -> 5)
cpu_count() {
    local n=0 r a b
    IFS=, read -ra rs <<< "$1"
    for r in "${rs[@]}"; do
        a=${r%-*} b=${r#*-}
        n=$((n + b - a + 1))
    done
    echo "$n"
}

# flca with class hints on six steps of 8 cpus that spin two threads each in
# bursts (the emulated VM): both a freeze and a confinement are seen, and a
# running step's threads are inside its user/cpuset.cpus.effective.  The
# engine plans with the steps' declared width (serve --policy-opt
# threads=declared, as a site may set it; by default flca would give each
# step the one core its threads keep busy and run all six): a pair per
# socket, each step folded on 2 of its 4 cpus, four run at once and two wait
# frozen.  (Four such steps would all run at once, folded.)  6 s quanta, so
# 12 s rounds: a look (five reads, two of them forks) took over 2 s in a slow
# CI VM, and with 2 s quanta no look at a running step came out consistent
# (7 frozen, 0 running in 30 samples); the steps spin 600 s, longer than the
# sampling takes there.
@test "flca under Slurm cgroup/v2: six steps frozen by cgroup.freeze and confined by user/cpuset.cpus, threads inside" {
    local script= i c look2 cpus steps="0 1 2 3 4 5"
    stop_engine
    slurm_engine_start --policy flca --policy-opt threads=declared --quantum 6s
    for i in $steps; do
        c=S; [ $i -ge 2 ] && c=C; [ $i -ge 4 ] && c=N
        script+="srun --overlap -n1 -c8 --cosched=flca:class=$c nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 600 > step$i.out 2> step$i.err &
        sleep 0.5
        "
    done
    salloc -n1 -c8 --cosched=flca bash -c "$script wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 60 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
    for i in $steps; do
        wait_for 90 '[ -n "$(tasks $JOB '$i')" ]' || { cat salloc.err step*.err >&2; false; }
    done
    local frozen=0 confined=0 stable=0 samples=0 unsure=0 gone=0 u look p t0=$SECONDS
    while [ $samples -lt 8 ] || { { [ $frozen -eq 0 ] || [ $confined -eq 0 ]; } && [ $samples -lt 30 ]; }; do
        samples=$((samples + 1))
        for i in $steps; do
            u=$(user "$JOB" "$i")
            p=$(tasks "$JOB" "$i" | head -n 1)
            [ -n "$p" ] || { gone=$((gone + 1)); continue; }
            look=$(cg2_look "$u" "$p" "step $JOB.$i (task $p)")
            case $look in
            '') unsure=$((unsure + 1)) ;;
            frozen) frozen=$((frozen + 1)) ;;
            running*)
                stable=$((stable + 1))
                if [ "$look" != "running 0-7" ]; then
                    confined=$((confined + 1))
                    # the engine's write, not a cpuset Slurm set: user/cpuset.cpus
                    # says so (read in a look of its own: the plan may have
                    # moved the step since cg2_look)
                    cpus=$(cat "$u/cpuset.cpus")
                    look2=$(cg2_look "$u" "$p" "step $JOB.$i (task $p)")
                    if [[ $look2 == running* ]] && [ "$cpus" = "$(cat "$u/cpuset.cpus")" ]; then
                        assert_equal "running $cpus" "$look2" "$u/cpuset.cpus of the confined step"
                    fi
                fi ;;
            esac
        done
    done
    "$COSCHED" status --socket "$CS_SOCKET" || true
    echo "samples $samples in $((SECONDS - t0)) s: $frozen frozen, $stable running (of which $confined confined) step observations; $unsure spanned a switch, $gone found no task"
    [ "$frozen" -gt 0 ] || { echo "flca never froze a step (6 x 8-cpu steps on 8 cpus)" >&2; false; }
    [ "$confined" -gt 0 ] || { echo "flca never confined a running step to fewer than 8 cpus" >&2; false; }
    scancel "$JOB"
    slurm_wait_gone "$JOB" 60
    wait "$BG" || true; BG=
    slurm_node_ok
}

@test "the engine killed with SIGKILL: its guardian thaws the frozen step (gang) and gives confined steps their cores back (tft)" {
    start_steps gang 4 2
    wait_for 60 '[ "$(frozen $JOB 0)" = 1 ] || [ "$(frozen $JOB 1)" = 1 ]'
    local p s want
    want=$(step_cpus "$JOB" 0)
    p=$(engine_pid)
    [ -n "$p" ]
    kill -KILL "$p"
    wait_for 20 '[ "$(frozen $JOB 0)" = 0 ] && [ "$(frozen $JOB 1)" = 0 ]'
    for s in 0 1; do
        assert_equal "$(cat "$(user "$JOB" $s)/cgroup.freeze")" 0 "step $s user/cgroup.freeze"
        assert_equal "$(task_cpus "$(tasks "$JOB" $s | head -n 1)")" "$want" "step $s's task's cpus"
    done
    scancel "$JOB"
    slurm_wait_gone "$JOB" 60
    wait "$BG" || true; BG=
    slurm_wait_idle 60
    engine_start

    # tft: two 8-cpu steps folded onto a socket each
    start_steps tft 8 2
    wait_for 60 '[ "$(cat $(user $JOB 0)/cpuset.cpus.effective)" != 0-7 ] && [ "$(cat $(user $JOB 1)/cpuset.cpus.effective)" != 0-7 ]' ||
        { "$COSCHED" status --socket "$CS_SOCKET" >&2; false; }
    for s in 0 1; do
        p=$(tasks "$JOB" $s | head -n 1)
        wait_for 10 '[ "$(task_cpus '$p')" = "$(cat $(user $JOB '$s')/cpuset.cpus.effective)" ]'
    done
    p=$(engine_pid)
    kill -KILL "$p"
    for s in 0 1; do
        p=$(tasks "$JOB" $s | head -n 1)
        wait_for 20 '[ "$(cat $(user $JOB '$s')/cpuset.cpus.effective)" = 0-7 ] && [ "$(task_cpus '$p')" = 0-7 ]' ||
            { echo "step $s: user/cpuset.cpus '$(cat "$(user "$JOB" $s)/cpuset.cpus")'" >&2; false; }
        assert_equal "$(frozen "$JOB" $s)" 0 "step $s frozen"
    done
    scancel "$JOB"
    slurm_wait_gone "$JOB" 60
    wait "$BG" || true; BG=
    slurm_node_ok
}

# Slurm 22.05 freezes a step only for the instant it signals it, so a step
# left frozen at an engine's start is a dead engine's: cs_slurm_thaw_leftovers
# looks for them where Slurm's cgroup/v2 puts steps - in Debian's build (one
# for multiple slurmd) system.slice/<node>_slurmstepd.scope, not
# system.slice/slurmstepd.scope.  The held records (which also thaw) are
# removed here so that only that search can find the step.
@test "engine and guardian both killed, their records lost: the next engine finds the step left frozen in <node>_slurmstepd.scope and thaws it" {
    start_steps gang 4 2
    wait_for 60 '[ "$(frozen $JOB 0)" = 1 ] || [ "$(frozen $JOB 1)" = 1 ]'
    local p g
    p=$(engine_pid)
    g=$(pgrep -x cosched-guard)
    [ -n "$p" ] && [ "$(echo "$g" | wc -w)" = 1 ] || { echo "engine '$p', guardians '$g' (want one each)" >&2; false; }
    # the guardian stopped first: it must not see the engine die
    kill -STOP "$g"
    kill -KILL "$p"
    kill -KILL "$g"
    wait_for 10 "! kill -0 $p 2>/dev/null && ! kill -0 $g 2>/dev/null"
    rm -f "$CS_SOCKET".held/*
    # one step frozen, or both when the kill came between a switch's freeze
    # and its thaw (seen once with Slurm 26.05): the next engine thaws either
    case $(frozen "$JOB" 0)$(frozen "$JOB" 1) in
    10|01|11) ;;
    *) echo "want a step left frozen, got $(frozen "$JOB" 0)$(frozen "$JOB" 1)" >&2; false ;;
    esac
    # the next engine (systemd would restart it; on demand, the next step
    # would); it thaws before it detaches, saying so on its stderr
    engine_start 2> next-engine.err || { cat next-engine.err >&2; false; }
    cat next-engine.err
    wait_for 60 '[ "$(frozen $JOB 0)" = 0 ] && [ "$(frozen $JOB 1)" = 0 ]' || { tail "$CS_SOCKET.log" >&2; false; }
    grep -q "was left frozen" next-engine.err
    scancel "$JOB"
    slurm_wait_gone "$JOB" 60
    wait "$BG" || true; BG=
    slurm_node_ok
}

@test "time limits under this Slurm: a held --time=1 job's limit grows by whole minutes; a job at its partition's MaxTime is never frozen" {
    # what the engine asks of this release (squeue -o '%A|%i|%l|%P', scontrol
    # show partition, update TimeLimit=+N), answered by it: run against
    # another release with tests/vm/check's SLURM_SBIN
    local n x
    n=$(nproc)
    scontrol delete PartitionName=short 2>/dev/null || true     # a failed run's
    scontrol create PartitionName=short Nodes="$SLURM_NODE" MaxTime=1 State=UP OverSubscribe=FORCE:4
    # A and C (room: 10 minutes) time-sliced by gang on the cores B does not
    # keep (B, never frozen, keeps a share of its own: cosched-policy(7))
    for x in a b c; do
        sbatch --parsable -o $x.out -e $x.err --time=$([ $x = c ] && echo 10 || echo 1) -n1 -c"$n" --cosched=gang \
            $([ $x = b ] && echo -p short) --wrap "srun -n1 -c$n nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 300" > $x.sub
    done
    A=$(cat a.sub) B=$(cat b.sub) C=$(cat c.sub)
    # A's and B's limits, read every second until each is gone: A runs every other
    # quantum, so it reaches its (grown) limit after a few minutes and is
    # gone 30 s later (MinJobAge); on a slow emulating host the checks of B
    # below can take that long (26.05: "Invalid job id" at the check once)
    for x in A B; do
        (while scontrol -o show job "${!x}" 2>/dev/null | grep -o 'TimeLimit=[^ ]*'; do sleep 1; done) > $x.limits &
    done
    wait_for 90 'grep -q "step $B\.0: never frozen" "$CS_SOCKET.log"' ||
        { cat a.err b.err >&2; tail -n 20 "$CS_SOCKET.log" >&2; false; }
    # gang runs A and C in turns; B runs through them, its tasks never
    # frozen once the switch after that line has thawed it
    wait_for 30 '[ "$(frozen "$B" 0)" = 0 ]'
    local i
    for i in $(seq 1 10); do
        [ "$(frozen "$B" 0)" != 1 ] || { echo "sample $i: step $B.0 frozen" >&2; false; }
        sleep 0.5
    done
    wait_for 90 'grep -Eq "TimeLimit=00:0[2-9]:00" A.limits' ||
        { sort A.limits | uniq -c >&2; scontrol -o show job "$A" >&2; tail -n 20 "$CS_SOCKET.log" >&2; false; }
    # B's stayed as it was (its partition's MaxTime)
    grep -q . B.limits
    [ -z "$(grep -v "TimeLimit=00:01:00" B.limits)" ] || { sort B.limits | uniq -c >&2; false; }
    scancel "$A" "$B" "$C"
    slurm_wait_gone "$A" 60
    slurm_wait_gone "$B" 60
    slurm_wait_gone "$C" 60
    scontrol delete PartitionName=short
    slurm_node_ok
}
