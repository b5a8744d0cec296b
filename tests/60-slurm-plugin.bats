#!/usr/bin/env bats
# 60-slurm-plugin: the SPANK plugin cosched.so in a real Slurm 22.05 (slurmctld,
# slurmd, munged started for this file by helpers/slurm.bash; no mocks of
# Slurm).  Where an engine must answer, a stub that only speaks the socket
# protocol stands in (helpers/stub_engine.py): these tests are about what the
# plugin does; the engine's own Slurm tests use the real engine.
#
# srun exits 0 even when a plugin fails remotely: every test checks stderr and
# the node's state (never drained), not only exit codes.

load helpers/common
load helpers/slurm

setup_file() {
    slurm_start
}

teardown_file() {
    slurm_stop
}

setup() {
    slurm_test_setup start=none
    STUB=
}

teardown() {
    if [ -n "${STUB:-}" ]; then
        kill "$STUB" 2>/dev/null || true
        wait "$STUB" 2>/dev/null || true
    fi
    [ -z "${SLURM_CONF:-}" ] || slurm_wait_idle 30 || true
}

# sr ARGS...: run srun ARGS with stdout in $out, stderr in $err, status in $rc.
sr() {
    rc=0
    srun "$@" > out 2> err || rc=$?
    out=$(cat out) err=$(cat err)
    printf 'srun %s -> status %s\n--- stdout:\n%s\n--- stderr:\n%s\n' "$*" "$rc" "$out" "$err"
}

# stub [REPLY]: start the stub engine on $CS_SOCKET, log in stub.log.
stub() {
    rm -f "$CS_SOCKET" stub.log
    python3 "$HELPERS/stub_engine.py" "$CS_SOCKET" "$PWD/stub.log" "$@" 3>&- &
    STUB=$!
    wait_for 5 test -S "$CS_SOCKET"
}

# The jobs Slurm knows (running or recently ended), sorted.
jobs_known() { slurm_jobs | sort -un; }

# nothing_launched BEFORE: no job was created since BEFORE (jobs_known) and
# the marker file the job would have written is absent.
nothing_launched() {
    assert_equal "$(jobs_known)" "$1" "jobs known to Slurm"
    [ ! -e marker ] || { echo "the job ran: marker exists"; return 1; }
}

notice_count() { grep -c '^cosched: step [0-9]*\.[0-9]* runs without co-scheduling: ' <<< "$err" || true; }

# ran_without_engine WHY: `srun -n2 --cosched=gang echo ran` exits 0 in less
# than 3 s with both tasks' output, one notice, and WHY on stderr
ran_without_engine() {
    local t0 t
    t0=$(_cs_now_us)
    sr -n2 --cosched=gang echo ran
    t=$((($(_cs_now_us) - t0) / 1000))
    echo "srun took $t ms"
    [ "$rc" -eq 0 ]
    assert_equal "$out" "$(printf 'ran\nran')" "the tasks' output"
    assert_equal "$(notice_count)" 1 "notice lines"
    assert_contains "$err" "$1"
    [ "$t" -lt 3000 ]
}

@test "the plugin's version stamp is the Slurm it runs under (slurmd -V)" {
    local addr ver hex
    addr=$(nm -D --defined-only "$CS_PLUGIN" | awk '$3 == "plugin_version" { print $1 }')
    [ -n "$addr" ] || { echo "no plugin_version symbol in $CS_PLUGIN"; return 1; }
    hex=$(objdump -s -j .rodata --start-address=0x$addr --stop-address=$((0x$addr + 4)) "$CS_PLUGIN" |
        awk '/^ [0-9a-f]+ / { print $2; exit }')
    # little-endian 32-bit SLURM_VERSION_NUMBER: 0xMMmmuu
    ver=$((0x${hex:6:2}${hex:4:2}${hex:2:2}${hex:0:2}))
    ver="$((ver >> 16)).$(printf %02d $(((ver >> 8) & 255))).$((ver & 255))"
    run "$SLURM_SBIN/slurmd" -V
    echo "plugin stamped $ver; $output"
    assert_equal "${output#slurm* }" "$ver" "Slurm version"
    # and Slurm loaded it: the option is there
    run srun --help
    assert_contains "$output" "--cosched=POLICY[:key=value,...]"
    grep -q "Loaded plugin cosched.so" "$SLURM_DIR"/log/slurmd.log ||
        srun -n1 true   # a first step makes slurmstepd load it
    slurm_node_ok
}

@test "--cosched is listed by srun, sbatch and salloc --help" {
    local c
    for c in srun sbatch salloc; do
        run $c --help
        echo "$c: $(grep -A3 -- --cosched <<< "$output")"
        [ "$status" -eq 0 ]
        assert_contains "$output" "--cosched=POLICY[:key=value,...]"
        assert_contains "$output" "co-schedule this step"
    done
}

@test "--cosched=help lists the allowed policies, one line each with its description, and launches nothing" {
    local before n
    before=$(jobs_known)
    sr --cosched=help touch marker
    [ "$rc" -eq 0 ]
    n=$(ls "$COSCHED_SRCDIR"/lua/policies/*.lua | wc -l)
    assert_equal "$(wc -l <<< "$out")" "$n" "policy lines"
    assert_contains "$out" "gang       Gang scheduling: one job at a time on all managed CPUs, round robin"
    assert_contains "$out" "flca       F-LCA: "
    assert_equal "$err" "" "stderr"
    nothing_launched "$before"

    slurm_plugstack start=none allowed=gang,tft,flca default=tft
    run sbatch --cosched=help --wrap "touch marker"
    echo "$output"
    [ "$status" -eq 0 ]
    # in the administrator's order
    assert_equal "${#lines[@]}" 3 "policy lines"
    assert_contains "${lines[0]}" "gang "
    assert_contains "${lines[1]}" "tft        Thread folding (TFT): two jobs at a time, each on half of the managed CPUs (default)"
    assert_contains "${lines[2]}" "flca "
    nothing_launched "$before"
    slurm_node_ok
}

@test "srun and sbatch reject a bad --cosched value with the message and launch nothing" {
    local before v want
    before=$(jobs_known)
    slurm_plugstack start=none allowed=gang,tft,flca
    while IFS='|' read -r v want; do
        sr -n1 --cosched="$v" touch marker
        [ "$rc" -ne 0 ]
        assert_contains "$err" "srun: error: $want"
        assert_equal "$out" "" "stdout"
        nothing_launched "$before"
        run sbatch --cosched="$v" --wrap "touch marker"
        echo "sbatch: $output"
        [ "$status" -ne 0 ]
        assert_contains "$output" "sbatch: error: $want"
        nothing_launched "$before"
    done <<'EOF'
lcaa|--cosched: unknown policy 'lcaa' (policies: gang, tft, flca)
lca|--cosched: policy 'lca' is not allowed on this cluster (policies: gang, tft, flca)
gang:prio=1|--cosched: unknown key 'prio' (valid keys: priority=INT (-1000..1000), class=S|C|N, omp_shim=yes|no)
gang:priority=high|--cosched: priority must be an integer between -1000 and 1000, got 'high'
tft:class=X|--cosched: class must be S, C or N
tft:quantum_ms=10|--cosched: quantum_ms is not a step option
EOF
    # salloc validates before it asks for an allocation too
    run salloc --cosched=lcaa true
    echo "salloc: $output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "--cosched: unknown policy 'lcaa'"
    nothing_launched "$before"
    slurm_node_ok
}

@test "--cosched=off: refused with optout=no, accepted otherwise (the step is not co-scheduled)" {
    local before
    before=$(jobs_known)
    slurm_plugstack start=none default=gang enforce=yes optout=no
    sr -n1 --cosched=off touch marker
    [ "$rc" -eq 255 ]
    assert_contains "$err" "--cosched: 'off' is not allowed on this cluster: the administrator co-schedules every step (optout=no)"
    nothing_launched "$before"

    slurm_plugstack start=none default=gang enforce=yes
    sr -n1 --cosched=off sh -c 'echo "policy=${COSCHED_POLICY:-unset}"'
    [ "$rc" -eq 0 ]
    assert_equal "$out" "policy=off" "the task's COSCHED_POLICY"
    assert_equal "$(notice_count)" 0 "notices (an opted-out step is not co-scheduled: nothing to say)"
    slurm_node_ok
}

@test "plugstack.conf with an unknown key or a bad value: the error names the key; required stops srun, optional drops the plugin" {
    local before
    before=$(jobs_known)
    slurm_plugstack start=none quantum_ms=abc
    sr -n1 touch marker
    [ "$rc" -ne 0 ]
    assert_contains "$err" "cosched: plugstack.conf: key 'quantum_ms': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is milliseconds), got 'abc'"
    assert_contains "$err" "required plugin cosched.so: init() failed"
    nothing_launched "$before"
    run sbatch --wrap "touch marker"
    echo "$output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "key 'quantum_ms': expected a duration from 10ms to 60s"
    nothing_launched "$before"

    slurm_plugstack start=none bogus=1
    sr -n1 touch marker
    [ "$rc" -ne 0 ]
    assert_contains "$err" "cosched: plugstack.conf: unknown key 'bogus' (known: default, quantum, allowed, optout, enforce, socket, start, cosched, idle_exit, policydir, timeout, omp_shim, extend_time, quantum_ms, timeout_ms)"
    nothing_launched "$before"

    slurm_plugstack start=none enforce=yes
    sr -n1 touch marker
    [ "$rc" -ne 0 ]
    assert_contains "$err" "key 'enforce': enforce=yes needs a default policy (default=POLICY)"
    nothing_launched "$before"

    # optional: Slurm says so and runs the step without the plugin (no --cosched at all)
    slurm_plugstack --optional start=none bogus=1
    sr -n1 sh -c 'touch marker; echo "policy=${COSCHED_POLICY:-unset}"'
    [ "$rc" -eq 0 ]
    assert_contains "$err" "unknown key 'bogus'"
    assert_equal "$out" "policy=unset" "the task's COSCHED_POLICY"
    [ -e marker ]
    sr -n1 --cosched=gang true
    [ "$rc" -ne 0 ]
    assert_contains "$err" "unrecognized option '--cosched=gang'"
    slurm_node_ok
}

@test "sbatch (and salloc) --cosched reaches every srun step of the job; srun --cosched overrides it; the batch step itself is not co-scheduled" {
    local j
    cat > job.sh <<'EOF'
#!/bin/bash
echo "batch=${COSCHED_POLICY:-unset}" > batch.out
srun -n1 sh -c 'echo "step=$COSCHED_POLICY"' > s0.out 2> s0.err
srun -n1 sh -c 'echo "step=$COSCHED_POLICY"' > s1.out 2> s1.err
srun -n1 --cosched=tft:class=S sh -c 'echo "step=$COSCHED_POLICY"' > s2.out 2> s2.err
EOF
    j=$(sbatch --parsable --cosched=gang:priority=2 -o job.out job.sh)
    echo "job $j"
    slurm_wait_gone "$j" 30
    cat job.out batch.out s*.out s*.err
    assert_equal "$(slurm_job_state "$j")" COMPLETED "job state"
    assert_equal "$(cat batch.out)" "batch=unset" "batch script"
    assert_equal "$(cat s0.out)" "step=gang" "step 0"
    assert_equal "$(cat s1.out)" "step=gang" "step 1"
    assert_equal "$(cat s2.out)" "step=tft" "step 2"
    # start=none: one notice per step, on that step's stderr
    for f in s0.err s1.err s2.err; do
        err=$(cat $f)
        assert_equal "$(notice_count)" 1 "notices in $f"
    done
    # salloc's value reaches the steps of its allocation the same way
    run salloc --cosched=tft srun -n1 sh -c 'echo "step=$COSCHED_POLICY"'
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "step=tft"
    slurm_node_ok
}

@test "enforce=yes co-schedules a step that did not ask, under the default policy; enforce=no does not" {
    slurm_plugstack start=none default=flca enforce=yes
    sr -n1 sh -c 'echo "policy=$COSCHED_POLICY"'
    [ "$rc" -eq 0 ]
    assert_equal "$out" "policy=flca" "the task's COSCHED_POLICY"
    assert_equal "$(notice_count)" 1 "notices"
    # a policy named by the user still wins; ':hints' alone take the default
    sr -n1 --cosched=gang sh -c 'echo "policy=$COSCHED_POLICY"'
    assert_equal "$out" "policy=gang" "COSCHED_POLICY with --cosched=gang"
    sr -n1 --cosched=:class=C sh -c 'echo "policy=$COSCHED_POLICY"'
    assert_equal "$out" "policy=flca" "COSCHED_POLICY with --cosched=:class=C"

    slurm_plugstack start=none default=flca
    sr -n1 sh -c 'echo "policy=${COSCHED_POLICY:-unset}"'
    [ "$rc" -eq 0 ]
    assert_equal "$out" "policy=unset" "COSCHED_POLICY of a step that did not ask (enforce=no)"
    assert_equal "$err" "" "stderr"
    slurm_node_ok
}

@test "no engine (start=none): the step runs normally and the user sees exactly one notice line" {
    sr -n2 --cosched=gang sh -c 'echo "task $SLURM_PROCID ${COSCHED_JOB:-nojob} ${OMP_WAIT_POLICY:-unset}"; exit 3'
    [ "$rc" -eq 3 ]    # the task's own exit status
    assert_equal "$(sort <<< "$out")" "$(printf 'task 0 nojob unset\ntask 1 nojob unset')" "the tasks' output"
    assert_equal "$(notice_count)" 1 "notice lines"
    assert_contains "$err" "runs without co-scheduling: no engine at $CS_SOCKET (start=none: the administrator starts it)"
    slurm_plugstack start=systemd
    sr -n1 --cosched=gang true
    [ "$rc" -eq 0 ]
    assert_equal "$(notice_count)" 1 "notice lines"
    assert_contains "$err" "(start=systemd: is cosched.service running?)"
    slurm_node_ok
}

@test "registration: each task registers from its step's cgroups with the step's facts, and deregisters when it exits" {
    requires python3
    stub
    sr -n2 -c1 --cosched=flca:priority=7,class=C sh -c 'echo "$SLURM_STEP_ID $COSCHED_POLICY $COSCHED_JOB $OMP_WAIT_POLICY"'
    cat stub.log
    [ "$rc" -eq 0 ]
    assert_equal "$err" "" "stderr (registered: no notice)"
    step=$(head -1 <<< "$out" | cut -d' ' -f1)
    assert_equal "$out" "$(printf '%s flca 1 passive\n%s flca 1 passive' "$step" "$step")" "the tasks' environment"
    job=$(grep -o ' job=[0-9]*' stub.log | head -1 | cut -d= -f2)
    [ "$(grep -c ' register ' stub.log)" -eq 2 ]
    for t in 0 1; do
        line=$(grep " register .* task=$t " stub.log)
        for kv in "job=$job" "step=$step" uid=0 ntasks=2 nnodes=1 cpus_per_task=1 policy=flca name=sh \
            priority=7 class=C; do
            assert_contains "$line" " $kv"
        done
        [[ $line =~ \ cores=[0-9,-]+ ]] || { echo "no cores list in: $line"; return 1; }
        pid=$(sed 's/.* pid=\([0-9]*\).*/\1/' <<< "$line")
        grep -q "deregister job=$job step=$step pid=$pid\$" stub.log
    done
    # when it registers, the task already is in the step's freezer and cpuset groups
    assert_equal "$(grep -c "^cgroup [0-9]*:freezer:/slurm_$SLURM_NODE/uid_0/job_$job/step_$step\$" stub.log)" 2 \
        "registrations from inside the step's freezer group"
    assert_equal "$(grep -c "^cgroup [0-9]*:cpuset:/slurm_$SLURM_NODE/uid_0/job_$job/step_$step\$" stub.log)" 2 \
        "registrations from inside the step's cpuset group"
    # a user's own OMP_WAIT_POLICY is kept
    OMP_WAIT_POLICY=active sr -n1 --cosched=gang sh -c 'echo "$OMP_WAIT_POLICY"'
    assert_equal "$out" active "OMP_WAIT_POLICY set by the user"
    slurm_node_ok
}

@test "OpenMP shim: a registered task gets libcosched-omp.so first in LD_PRELOAD and keeps its wait policy; passive where the shim cannot apply" {
    requires python3
    shim=$COSCHED_BUILDDIR/launcher/omp/libcosched-omp.so
    [ -f "$shim" ] || { echo "$shim is not built"; return 1; }
    unset LD_PRELOAD OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME COSCHED_OMP OMP_DYNAMIC OMP_PROC_BIND OMP_PLACES KMP_AFFINITY
    stub
    slurm_plugstack start=none omp_shim="$shim"
    show='echo "p=${LD_PRELOAD-unset} w=${OMP_WAIT_POLICY-unset}"'
    sr -n1 --cosched=gang sh -c "$show"
    [ "$rc" -eq 0 ]
    assert_equal "$out" "p=$shim w=unset" "a dynamic task's environment"
    # the user's preloads stay, after the shim
    LD_PRELOAD=libm.so.6 sr -n1 --cosched=gang sh -c "$show"
    assert_equal "$out" "p=$shim:libm.so.6 w=unset" "with the user's LD_PRELOAD"
    # passive where the shim cannot apply: the step says omp_shim=no, the job opts out, a static program
    sr -n1 --cosched=gang:omp_shim=no sh -c "$show"
    assert_equal "$out" "p=unset w=passive" "--cosched=gang:omp_shim=no"
    COSCHED_OMP=off sr -n1 --cosched=gang sh -c "$show"
    assert_equal "$out" "p=unset w=passive" "COSCHED_OMP=off"
    OMP_PROC_BIND=close sr -n1 --cosched=gang sh -c "$show"
    assert_equal "$out" "p=unset w=passive" "OMP_PROC_BIND=close"
    if [ -x "$PROGS/showenv_static" ]; then
        sr -n1 --cosched=gang "$PROGS/showenv_static" LD_PRELOAD OMP_WAIT_POLICY
        assert_equal "$out" "LD_PRELOAD unset"$'\n'"OMP_WAIT_POLICY=passive" "a static program"
    fi
    # no page from this engine: none in the environment, none among the task's descriptors
    COSCHED_OMP_PAGE=3 sr -n1 --cosched=gang sh -c 'echo "${COSCHED_OMP_PAGE-none}"; ls -l /proc/self/fd/ | grep -c memfd:; exit 0'
    assert_equal "$out" "none"$'\n'"0" "the page without one"
    # a descriptor that is not the engine's page (unsealed) is closed: the task runs with the shim, no page
    kill "$STUB" && wait "$STUB" 2>/dev/null || true
    stub BADPAGE
    sr -n1 --cosched=gang sh -c "$show"' ${COSCHED_OMP_PAGE-none}; ls -l /proc/self/fd/ | grep -c memfd:; exit 0'
    [ "$rc" -eq 0 ]
    assert_equal "$err" "" "stderr"
    assert_equal "$out" "p=$shim w=unset none"$'\n'"0" "a task given a bad page"
    grep "not an OpenMP page" "$SLURM_DIR/log/slurmd.log"
    # an engine whose policy runs steps on the same CPUs (linux) says so: passive
    kill "$STUB" && wait "$STUB" 2>/dev/null || true
    stub "OK id=1 policy=linux shares_cpus=1"
    sr -n1 --cosched=linux sh -c "$show"
    assert_equal "$out" "p=unset w=passive" "under an engine with shares_cpus=1"
    # plugstack omp_shim=none: passive for every task, as before the shim
    slurm_plugstack start=none omp_shim=none
    sr -n1 --cosched=gang sh -c "$show"
    assert_equal "$out" "p=unset w=passive" "omp_shim=none"
    slurm_node_ok
}

@test "batch and extern steps never register; every srun step of the job does" {
    requires python3
    stub
    j=$(sbatch --parsable --cosched=gang -o job.out --wrap 'srun -n1 true; srun -n1 true')
    slurm_wait_gone "$j" 30
    cat stub.log job.out
    assert_equal "$(slurm_job_state "$j")" COMPLETED "job state"
    assert_equal "$(grep ' register ' stub.log | grep -o ' step=[0-9]*' | tr '\n' ' ')" " step=0  step=1 " "registered steps"
    slurm_node_ok
}

@test "the engine refuses: the step runs normally with one notice quoting the engine" {
    requires python3
    stub "ERR policy 'gang' is not allowed here"
    sr -n2 --cosched=gang sh -c 'echo "ran ${COSCHED_JOB:-nojob}"'
    [ "$rc" -eq 0 ]
    assert_equal "$out" "$(printf 'ran nojob\nran nojob')" "the tasks' output"
    assert_equal "$(notice_count)" 1 "notice lines"
    assert_contains "$err" "runs without co-scheduling: the engine refused: policy 'gang' is not allowed here"
    slurm_node_ok
}

@test "a later task refused after the first registered: the step leaves the engine whole, at once" {
    requires python3
    stub ERR_AFTER_FIRST
    # while the tasks still run, each reads how many deregistrations the engine got
    sr -n2 -c1 --cosched=gang sh -c "sleep 2; grep -c ' deregister ' '$PWD/stub.log'"
    cat stub.log
    [ "$rc" -eq 0 ]
    assert_equal "$out" "$(printf '1\n1')" "deregistrations seen by the running tasks"
    assert_contains "$err" "runs without co-scheduling: the engine refused: refused for the test"
    # task 0's deregistration came right after task 1's refusal, not when it exits
    pid0=$(grep " register .* task=0 " stub.log | sed 's/.* pid=\([0-9]*\).*/\1/')
    [ -n "$pid0" ]
    assert_equal "$(grep -c "deregister .* pid=$pid0\$" stub.log)" 1 "deregistrations of task 0"
    assert_equal "$(grep -v '^cgroup \|^cpus ' stub.log | grep -n . | grep -E ' (register|deregister) ' | \
        sed 's/.*COSCHED\/1 \([a-z]*\) .*/\1/' | tr '\n' ' ')" "register register deregister " "order of requests"
    slurm_node_ok
}

@test "an engine that does not answer deregistrations costs a step's exit one wait, not one per task" {
    requires python3
    stub HANG_DEREG
    sr -n2 -c1 --cosched=gang true
    cat stub.log
    [ "$rc" -eq 0 ]
    assert_equal "$(grep -c ' register ' stub.log)" 2 "registrations"
    assert_equal "$(grep -c ' deregister ' stub.log)" 1 "deregistrations tried"
    slurm_node_ok
}

@test "an engine that never answers delays a step by at most timeout_ms" {
    requires python3
    stub HANG
    slurm_plugstack start=none timeout_ms=1000
    ran_without_engine "no answer in time"
    slurm_node_ok
}

@test "start=ondemand: an engine that cannot start or never binds its socket costs one notice, within timeout_ms" {
    slurm_plugstack start=ondemand cosched=/nonexistent/cosched
    sr -n1 --cosched=gang echo ran
    [ "$rc" -eq 0 ]
    assert_equal "$out" ran "the task's output"
    assert_equal "$(notice_count)" 1 "notice lines"
    assert_contains "$err" "cannot start the engine: /nonexistent/cosched: No such file or directory"

    # /bin/true "starts" and exits at once: the plugin waits for the socket, then gives up
    slurm_plugstack start=ondemand cosched=/bin/true timeout_ms=800
    ran_without_engine "the engine started with /bin/true did not answer at $CS_SOCKET within 800 ms (its messages: $CS_SOCKET.log)"
    slurm_node_ok
}
