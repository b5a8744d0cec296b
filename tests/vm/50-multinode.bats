#!/usr/bin/env bats
# tests/vm/50-multinode: two Slurm nodes on two machines - the two VMs of
# `tests/vm/check -n 2` (tests/vm/vmrun -n 2: 8 CPUs each, pure cgroup2 with
# cpuset, one Ethernet link between them that only the two qemu processes
# share, 10.0.9.1 = vm1 and 10.0.9.2 = vm2).  bats runs in vm1, which also
# runs slurmctld; vm2 runs what vm1 asks of it (tests/vm/node2, on_vm2
# below).  Each node has its own munged, slurmd (Slurm 22.05, cgroup/v2 as in
# tests/vm/40-slurm.bats) and its own engine, started on demand by the
# plugin on that node.  Skips unless run in the two VMs.
#
# What is asserted is what each node's kernel shows (cgroup.events,
# cpuset.cpus.effective, Cpus_allowed_list), read on that node.  Each
# node's engine is started by the test before the steps (as in
# tests/vm/40-slurm.bats: under emulation it starts slower than the plugin
# may wait for it).

load ../helpers/common
load ../helpers/slurm

in_two_vms() { [ "${COSCHED_VM:-}" = 1 ] && [ "${COSCHED_VM_NODES:-1}" = 2 ] && [ "${COSCHED_VM_ID:-}" = 1 ]; }

# on_vm2 SCRIPT [TIMEOUT]: run SCRIPT with bash on vm2, as root, with
# tests/helpers/{common,slurm}.bash loaded and Slurm's environment (SLURM_DIR's
# env file) when there is one; its stdout on stdout, its stderr on stderr, its
# exit status returned (1 when it has not ended within TIMEOUT s, 300).
on_vm2() {
    local n f
    n=$(date +%s%N)
    f=/vmshare/req/$n
    mkdir -p /vmshare/req /vmshare/done
    {
        echo "cd /tmp"
        echo "COSCHED_SRCDIR='$COSCHED_SRCDIR' COSCHED_BUILDDIR='$COSCHED_BUILDDIR'"
        echo "source '$COSCHED_SRCDIR/tests/helpers/common.bash' && source '$COSCHED_SRCDIR/tests/helpers/slurm.bash' || exit 125"
        [ -z "${SLURM_DIR:-}" ] || echo "[ ! -f '$SLURM_DIR/env' ] || source '$SLURM_DIR/env'; SLURM_NODE=vm2"
        echo "$1"
    } > "$f.tmp"
    mv "$f.tmp" "$f.sh"
    wait_for "${2:-300}" test -f "/vmshare/done/$n.rc" || { echo "on_vm2: no answer from vm2 (tests/vm/node2)" >&2; return 1; }
    cat "/vmshare/done/$n.out"
    cat "/vmshare/done/$n.err" >&2
    return "$(cat "/vmshare/done/$n.rc")"
}

setup_file() {
    in_two_vms || return 0
    SLURM_CGROUP=v2 SLURM_NODE_ADDRS="vm1=10.0.9.1 vm2=10.0.9.2" slurm_start || return 1
    [ ! -f "$BATS_FILE_TMPDIR/slurm.skip" ] || return 0
    slurm_plugstack start=ondemand quantum_ms=2000 timeout_ms=3000
    # vm2: the same files at the same path, then its munged and slurmd
    rm -rf /vmshare/slurm && mkdir -p /vmshare/slurm
    cp "$SLURM_DIR"/slurm.conf "$SLURM_DIR"/cgroup.conf "$SLURM_DIR"/plugstack.conf "$SLURM_DIR"/env /vmshare/slurm/
    on_vm2 "mkdir -p '$SLURM_DIR' && chmod 755 '$SLURM_DIR' && cp /vmshare/slurm/* '$SLURM_DIR'/ &&
            source '$SLURM_DIR/env' && slurm_start_node vm2" ||
        { _slurm_fail "vm2's munged or slurmd did not start"; return 1; }
    slurm_wait_idle 120 || { sinfo -N >&2; on_vm2 'tail -20 $SLURM_DIR/log/slurmd.vm2.log' >&2; _slurm_fail "the nodes did not become idle"; return 1; }
}

teardown_file() {
    in_two_vms || return 0
    slurm_stop
}

setup() {
    in_two_vms || skip "runs in the two VMs of tests/vm/check -n 2 only (make check-vm)"
    slurm_require
    cd "$BATS_TEST_TMPDIR"
    chmod 755 "$BATS_TEST_TMPDIR"
    BG=
    # the job's working directory on vm2 too (slurmstepd changes into it)
    on_vm2 "mkdir -p '$BATS_TEST_TMPDIR' && chmod 755 '$BATS_TEST_TMPDIR' && slurm_engine_start"
    slurm_engine_start
}

teardown() {
    [ -z "${BG:-}" ] || { kill "$BG" 2>/dev/null; wait "$BG" 2>/dev/null || true; }
    [ -z "${SLURM_CONF:-}" ] || { scancel -u root 2>/dev/null || true; slurm_wait_idle 60 || true; }
    slurm_engine_stop
    on_vm2 slurm_engine_stop || true
}

@test "two VMs, two Slurm nodes with cgroup/v2: a two-node step has a task on each, in that node's stepd scope" {
    run srun -N2 -n2 -l bash -c 'echo "$(hostname) $(cut -d: -f3 /proc/self/cgroup)"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ vm1\ /system.slice/vm1_slurmstepd.scope/(job_[0-9]+|s[0-9A-Z]{13})/step_0/user/task_ ]]
    [[ $output =~ vm2\ /system.slice/vm2_slurmstepd.scope/(job_[0-9]+|s[0-9A-Z]{13})/step_0/user/task_ ]]
}

# The job: 4 cpus on each node.  Step 0 spans both nodes; steps 1 and 2 run
# on vm1 only, step 3 on vm2 only.  Under gang vm1's engine rotates steps 1
# and 2 (each is frozen in turn) and never freezes step 0, which spans nodes
# (cosched(1) SLURM); vm2's engine has step 0's other part and step 3 and
# freezes neither: step 0 keeps a share of the cores, and step 3, the only
# one gang schedules there, runs on the rest in every turn (cosched-policy(7),
# JOBS THAT ARE NEVER FROZEN).
@test "a step spanning both nodes is never frozen on either; vm1's one-node steps are time-sliced, vm2's are not disturbed" {
    salloc -N2 -n2 -c4 --cosched=gang bash -c "
        srun --overlap -N2 -n2 -c4 nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 300 > wide.out 2> wide.err &
        sleep 1
        srun --overlap -N1 -n1 -c4 -w vm1 nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 300 > n1.out 2> n1.err &
        sleep 1
        srun --overlap -N1 -n1 -c4 -w vm1 nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 300 > n2.out 2> n2.err &
        sleep 1
        srun --overlap -N1 -n1 -c4 -w vm2 nice -n 19 '$PROGS/spin' -t 2 -d 10000 -w 300 > n3.out 2> n3.err &
        wait" > salloc.out 2> salloc.err &
    BG=$!
    wait_for 60 '[ -n "$(squeue -h -o %i)" ]'
    JOB=$(squeue -h -o %i | head -1)
    user() { echo "$(slurm_step_dir "$JOB" "$1" "$2")/user"; }
    for s in 0 1 2; do
        wait_for 120 'cat $(user '$s' vm1)/task_*/cgroup.procs 2>/dev/null | grep -q .' || { cat salloc.err ./*.err >&2; false; }
        wait_for 60 '"$COSCHED" status --socket "$CS_SOCKET" | grep -q "^$JOB.'$s' "' || { cat salloc.err ./*.err >&2; false; }
    done
    "$COSCHED" status --socket "$CS_SOCKET" --json > st1.json
    # vm2: both its steps registered with vm2's own engine; then sampled there
    on_vm2 "wait_for 120 '\"\$COSCHED\" status --socket \"\$CS_SOCKET\" | grep -q \"^$JOB.3 \"' &&
            wait_for 60 '\"\$COSCHED\" status --socket \"\$CS_SOCKET\" | grep -q \"^$JOB.0 \"' &&
            \"\$COSCHED\" status --socket \"\$CS_SOCKET\" --json" > st2.json
    python3 - st1.json st2.json "$(hostname)" <<'EOF'
import json, sys
for f, want in ((sys.argv[1], {0: (2, True), 1: (1, False), 2: (1, False)}), (sys.argv[2], {0: (2, True), 3: (1, False)})):
    d = json.load(open(f))
    by = {s["step"]: s for s in d["steps"]}
    assert sorted(by) == sorted(want), (f, sorted(by), sorted(want))
    for k, (nodes, never) in want.items():
        assert by[k]["nodes"] == nodes and bool(by[k]["never_frozen"]) == never, (f, k, by[k])
EOF
    # vm2: 20 samples while vm1 rotates - step 0's and step 3's tasks never
    # frozen, each on the cpus of its cpuset, which never change; where Slurm
    # made no cpuset below the job (23.11 and later here: nobody confines
    # these steps), on the cpus Slurm bound them to at the first look
    on_vm2 "
        wait_for 60 '! \"\$COSCHED\" status --socket \"\$CS_SOCKET\" | grep -q \"until Slurm says\"'
        fz=0 moved=0 bad=0
        for s in 0 3; do
            u=\$(slurm_step_dir $JOB \$s)/user
            if [ -r \$u/cpuset.cpus.effective ]; then e[\$s]=\$(cat \$u/cpuset.cpus.effective)
            else e[\$s]=\$(task_cpus \$(cat \$u/task_*/cgroup.procs | head -n 1)); fi
        done
        for i in \$(seq 20); do
            for s in 0 3; do
                u=\$(slurm_step_dir $JOB \$s)/user
                grep -qx 'frozen 0' \$u/cgroup.events || fz=\$((fz + 1))
                [ ! -r \$u/cpuset.cpus.effective ] || [ \"\$(cat \$u/cpuset.cpus.effective)\" = \"\${e[\$s]}\" ] || moved=\$((moved + 1))
                p=\$(cat \$u/task_*/cgroup.procs | head -n 1)
                [ \"\$(task_cpus \$p)\" = \"\${e[\$s]}\" ] || bad=\$((bad + 1))
            done
            sleep 0.5
        done
        echo \"vm2: step 0 on \${e[0]}, step 3 on \${e[3]}; samples frozen \$fz, cpuset changed \$moved, threads elsewhere \$bad\"
        [ \$fz -eq 0 ] && [ \$moved -eq 0 ] && [ \$bad -eq 0 ]" &
    local v2=$!
    # vm1 meanwhile: steps 1 and 2 each seen frozen, step 0 never
    local seen1=0 seen2=0 wide=0 n=0
    while [ $n -lt 60 ] && { [ $seen1 -eq 0 ] || [ $seen2 -eq 0 ]; }; do
        n=$((n + 1))
        grep -qx 'frozen 0' "$(user 0 vm1)/cgroup.events" || wide=$((wide + 1))
        grep -qx 'frozen 1' "$(user 1 vm1)/cgroup.events" && seen1=1
        grep -qx 'frozen 1' "$(user 2 vm1)/cgroup.events" && seen2=1
    done
    echo "vm1: $n samples, step 1 seen frozen $seen1, step 2 $seen2, step 0 frozen $wide times"
    wait "$v2"
    [ $wide -eq 0 ]
    [ $seen1 -eq 1 ] && [ $seen2 -eq 1 ]
    scancel "$JOB"
    slurm_wait_gone "$JOB" 60
    wait "$BG" || true; BG=
    if grep 'cosched:' ./*.err; then false; fi
    slurm_node_ok
}
