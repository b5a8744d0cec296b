# slurm.bash - a real single-node Slurm (Debian's 22.05) for the tests, with
# cosched's SPANK plugin (plugin/cosched.so) in its plugstack.conf.
# `load helpers/common` first.
#
# Typical use, one cluster per .bats file:
#
#   setup_file()    { slurm_start; }            # skips every test with the reason
#   teardown_file() { slurm_stop; }             #   when Slurm or the plugin is missing
#   setup()         { slurm_require; slurm_plugstack start=none; }
#   @test ... { run srun -n1 --cosched=gang true; ...; slurm_node_ok; }
#
# Everything lives in SLURM_DIR (/tmp/cs.XXXXXX, or $1 of slurm_start;
# removed by slurm_stop): slurm.conf, cgroup.conf, plugstack.conf, state, spool, logs,
# pid files, a private munged and its socket.  The node gets a name of its
# own (cs<CS_RUN_ID>, common.bash) and its own ports, so two test runs on one
# machine do not meet: Slurm's cgroups are /sys/fs/cgroup/<controller>/slurm_<node>.
#
# Exported for the tests (and kept in $SLURM_DIR/env for a later process):
#   SLURM_CONF      every client command needs it (no /etc/slurm/slurm.conf)
#   SLURM_NODE      the node name
#   SLURM_DIR       the directory above
#   CS_SOCKET       the engine socket path plugstack.conf gets (socket=$SLURM_DIR/e.sock)
#   CS_PLUGIN       the plugin under test
#   SLURM_EXTRA_CONF  (set before slurm_start) lines appended to slurm.conf,
#                   e.g. "PreemptMode=GANG" for Slurm's own gang scheduling
#   SLURM_CGROUP    (set before slurm_start) v1 (default) or v2: Slurm's
#                   cgroup/v2 plugin, for a pure cgroup2 hierarchy (Slurm
#                   refuses a hybrid one).  Where systemd runs the machine
#                   (/run/systemd/system, as on a site's node; tests/vm/vmrun
#                   -s), each slurmd is a systemd service,
#                   slurmd-<node>.service, with the settings of Slurm's own
#                   slurmd.service (Type=simple, slurmd -D, Delegate=yes,
#                   KillMode=process), and cgroup.conf is a site's default:
#                   Slurm asks systemd over dbus for its stepd scope.
#                   Without systemd: cgroup.conf says IgnoreSystemd=yes and
#                   CgroupAutomount=yes, and each slurmd starts in a cgroup of
#                   its own, system.slice/slurmd-<node>.service, where systemd
#                   would have put it (tests/vm/README)
#   SLURM_NODE_ADDRS  (set before slurm_start) "NAME=ADDRESS ...": nodes on
#                   separate machines (the two VMs of tests/vm/vmrun -n 2).
#                   slurmctld runs here and listens on the first one's
#                   address; here only the slurmd of the node named like this
#                   machine (hostname) starts; each other node starts with
#                   `slurm_start_node NAME` on its machine, given SLURM_DIR's
#                   files at the same path there.  slurm_start does not wait
#                   for the nodes then: slurm_wait_idle once all are started.
#   SLURM_NODES     every node name (SLURM_NNODES=2 before slurm_start: two
#                   slurmd on this machine, Debian's Slurm supports multiple
#                   slurmd; the first is SLURM_NODE, the second SLURM_NODE"b")
#
# Functions:
#   slurm_start [DIR]           start munged, slurmctld, slurmd; wait until idle
#   slurm_start_node NAME       another machine's part (SLURM_NODE_ADDRS): with
#                               SLURM_DIR's files copied there, start munged and
#                               the slurmd of node NAME
#   slurm_stop                  cancel every job, stop the daemons, remove Slurm's
#                               cgroups of this node, pid files, stray slurmstepds
#   slurm_require               in setup(): skip unless slurm_start succeeded
#   slurm_plugstack [--optional] [KEY=VALUE...]
#                               write plugstack.conf: the plugin with the test
#                               defaults (policydir, cosched, socket) and then the
#                               given arguments (later keys win); applies to new
#                               steps at once, no restart
#   slurm_plugstack_raw LINE... write plugstack.conf verbatim
#   slurm_wait_idle [TIMEOUT]   wait until the node is idle (no job on it)
#   slurm_job_state JOBID...    the state of each job (PENDING, RUNNING,
#                               COMPLETED, ...; GONE when Slurm forgot it)
#   slurm_wait_job JOBID STATE [TIMEOUT]   wait for a job state
#   slurm_wait_gone JOBID [TIMEOUT]        wait until the job has ended
#                               (COMPLETED, FAILED, CANCELLED, ... or GONE)
#   slurm_jobs                  the ids of the jobs Slurm knows, one a line
#   slurm_node_ok               the node is not drained/down (prints its state)
#   slurm_step_cgroups          Slurm's cgroup directories of this node
#   slurm_engine_start [ARGS]   a node engine on CS_SOCKET (cosched serve --detach,
#                               quantum 2 s, no counters, ARGS added), as systemd
#                               would start it; waits until it answers
#   slurm_engine_pid            its pid (from a ping), empty when none answers
#   slurm_engine_stop [SECONDS] SIGTERM to it, wait (20 s) until it has exited
#   slurm_test_setup ARGS...    a test's setup: slurm_require, its tmpdir
#                               (0755), plugstack.conf with ARGS
#   slurm_test_teardown [SECONDS]  an engine test's teardown: kill $BG,
#                               cancel every job, wait for idle, stop the engine
#   slurm_under_systemd         systemd runs this machine (sd_booted(3)'s test):
#                               slurmd is then a systemd service (SLURM_CGROUP=v2)
#   slurm_step_dir JOB STEP [NODE]  the step's cgroup: v1, its freezer group;
#                               v2, job_JOB (or the job's SLUID, 26.05)/step_STEP
#                               in the node's stepd scope

SLURM_SBIN=${SLURM_SBIN:-/usr/sbin}
CS_PLUGIN=${CS_PLUGIN:-$COSCHED_BUILDDIR/plugin/cosched.so}
HELPERS=${HELPERS:-$COSCHED_SRCDIR/tests/helpers}

# ------------------------------------------------------------------ start / stop

slurm_start() {
    local dir=${1:-} port i
    _slurm_why=
    if [ "$(id -u)" -ne 0 ]; then
        _slurm_skip "needs root (slurmd and slurmstepd run as root)"; return 0
    fi
    for i in slurmctld slurmd munged; do
        [ -x "$SLURM_SBIN/$i" ] || { _slurm_skip "needs Slurm and munge ($SLURM_SBIN/$i is missing: apt-get install slurmctld slurmd slurm-client munge)"; return 0; }
    done
    command -v srun >/dev/null || { _slurm_skip "needs srun (Debian package slurm-client)"; return 0; }
    [ -f "$CS_PLUGIN" ] || { _slurm_skip "needs $CS_PLUGIN (configure found no slurm/spank.h: install libslurm-dev and re-run configure)"; return 0; }
    [ -r /etc/munge/munge.key ] || { _slurm_skip "needs /etc/munge/munge.key (the munge package creates it)"; return 0; }

    # world-readable and short (sun_path holds 108 bytes): users' sruns read
    # the configuration, munged wants its socket directory open to all
    [ -n "$dir" ] || { dir=$(mktemp -d /tmp/cs.XXXXXX) && chmod 755 "$dir"; }
    [ -n "${BATS_FILE_TMPDIR:-}" ] && echo "$dir" > "$BATS_FILE_TMPDIR/slurm.dir"
    SLURM_DIR=$dir
    SLURM_NODE=cs$CS_RUN_ID
    SLURM_CGROUP=${SLURM_CGROUP:-v1}
    SLURM_NODES=$SLURM_NODE
    [ "${SLURM_NNODES:-1}" -lt 2 ] || SLURM_NODES="$SLURM_NODE ${SLURM_NODE}b"
    if [ -n "${SLURM_NODE_ADDRS:-}" ]; then
        SLURM_NODES=$(for i in $SLURM_NODE_ADDRS; do echo "${i%%=*}"; done | tr '\n' ' ' | sed 's/ $//')
        SLURM_NODE=$(hostname)
    fi
    rm -rf "$SLURM_DIR"
    mkdir -p "$SLURM_DIR"/{state,spool,log,munge}
    chmod 755 "$SLURM_DIR"
    CS_SOCKET=$SLURM_DIR/e.sock
    SLURM_CONF=$SLURM_DIR/slurm.conf
    export SLURM_DIR SLURM_NODE SLURM_NODES SLURM_CONF CS_SOCKET CS_PLUGIN SLURM_CGROUP

    port=$(_slurm_free_port)
    _slurm_write_conf "$port" "$((port + 1))"
    slurm_plugstack start=none
    { declare -p SLURM_DIR SLURM_NODES SLURM_CONF CS_SOCKET CS_PLUGIN SLURM_CGROUP | sed 's/^declare -[a-z-]* /export /'; } > "$SLURM_DIR/env"
    # (each machine's own node name: not in env, which other machines share)
    [ -n "${SLURM_NODE_ADDRS:-}" ] || echo "export SLURM_NODE=$SLURM_NODE" >> "$SLURM_DIR/env"

    _slurm_munged || { _slurm_skip "munged did not start: $(cat "$SLURM_DIR/log/munged.err")"; return 0; }

    "$SLURM_SBIN/slurmctld" -f "$SLURM_CONF" -i 2>"$SLURM_DIR/log/slurmctld.err" ||
        { _slurm_fail "slurmctld did not start"; return 1; }
    for i in $SLURM_NODES; do
        [ -z "${SLURM_NODE_ADDRS:-}" ] || [ "$i" = "$SLURM_NODE" ] || continue
        _slurm_in_own_cgroup "$i" "$SLURM_SBIN/slurmd" -f "$SLURM_CONF" -N "$i" 2>"$SLURM_DIR/log/slurmd.$i.err" ||
            { _slurm_fail "slurmd -N $i did not start"; return 1; }
    done
    [ -n "${SLURM_NODE_ADDRS:-}" ] || slurm_wait_idle 60 || { _slurm_fail "the node did not become idle"; return 1; }
}

slurm_start_node() {
    SLURM_NODE=$1
    export SLURM_NODE
    mkdir -p "$SLURM_DIR"/{state,spool,log,munge}
    _slurm_munged || { echo "munged did not start: $(cat "$SLURM_DIR/log/munged.err")" >&2; return 1; }
    _slurm_in_own_cgroup "$1" "$SLURM_SBIN/slurmd" -f "$SLURM_CONF" -N "$1" 2>"$SLURM_DIR/log/slurmd.$1.err" ||
        { echo "slurmd -N $1 did not start: $(cat "$SLURM_DIR/log/slurmd.$1.err")" >&2; return 1; }
}

# a private munged: its own socket, the machine's key
_slurm_munged() {
    chown munge:munge "$SLURM_DIR/munge"
    chmod 755 "$SLURM_DIR/munge"
    runuser -u munge -- "$SLURM_SBIN/munged" --socket="$SLURM_DIR/munge/munge.sock" \
        --pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/munge/munged.log" \
        --seed-file="$SLURM_DIR/munge/munged.seed" --key-file=/etc/munge/munge.key 2>"$SLURM_DIR/log/munged.err"
}

slurm_stop() {
    local f pid d i
    [ -n "${SLURM_DIR:-}" ] && [ -d "$SLURM_DIR" ] || return 0
    if [ -f "$SLURM_DIR/slurmctld.pid" ] && _slurm_alive "$SLURM_DIR/slurmctld.pid"; then
        scancel --full $(slurm_jobs) 2>/dev/null || true
        wait_for 30 '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' || true
    fi
    # (several slurmd: one pid file per node; the glob must look in SLURM_DIR)
    for f in $(cd "$SLURM_DIR" && echo slurmd*.pid) slurmctld.pid munge/munged.pid; do
        [ -f "$SLURM_DIR/$f" ] || continue
        pid=$(cat "$SLURM_DIR/$f" 2>/dev/null) || continue
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || continue
        wait_for 15 _cs_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
        rm -f "$SLURM_DIR/$f"
    done
    # under systemd, its units of this node: the stepd scope (what is left
    # in it is killed) and the slurmd service, failed or not
    if [ "${SLURM_CGROUP:-v1}" = v2 ] && slurm_under_systemd; then
        for i in $SLURM_NODES; do
            systemctl stop "${i}_slurmstepd.scope" "slurmd-$i.service" 2>/dev/null || true
            systemctl reset-failed "${i}_slurmstepd.scope" "slurmd-$i.service" 2>/dev/null || true
        done
    fi
    # slurmstepds (and their tasks) of this node that outlived slurmd
    for d in $(slurm_step_cgroups); do
        for f in "$d/cgroup.procs"; do
            [ -r "$f" ] || continue
            while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$f"
        done
    done
    for d in $(slurm_step_cgroups | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-); do
        [ -f "$d/freezer.state" ] && { echo THAWED > "$d/freezer.state"; } 2>/dev/null
        [ -f "$d/cgroup.freeze" ] && { echo 0 > "$d/cgroup.freeze"; } 2>/dev/null
        for i in 1 2 3 4 5; do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
    done
    rm -rf "$SLURM_DIR"
    return 0
}

slurm_require() {
    [ -z "${SLURM_SKIP:-}" ] || skip "$SLURM_SKIP"
    [ -f "${BATS_FILE_TMPDIR:-/nonexistent}/slurm.skip" ] && skip "$(cat "$BATS_FILE_TMPDIR/slurm.skip")"
    [ -f "${BATS_FILE_TMPDIR:-/nonexistent}/slurm.failed" ] &&
        { echo "slurm_start failed: $(cat "$BATS_FILE_TMPDIR/slurm.failed")" >&2; return 1; }
    [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ] || { echo "slurm_start was not called" >&2; return 1; }
}

# ------------------------------------------------------------------ plugstack.conf

slurm_test_setup() {
    slurm_require
    cd "$BATS_TEST_TMPDIR"
    chmod 755 "$BATS_TEST_TMPDIR"
    slurm_plugstack "$@"
}

slurm_test_teardown() {
    [ -z "${BG:-}" ] || { kill "$BG" 2>/dev/null; wait "$BG" 2>/dev/null || true; }
    [ -z "${SLURM_CONF:-}" ] || { scancel -u root 2>/dev/null || true; slurm_wait_idle 30 || true; }
    slurm_engine_stop "$@"
}

slurm_plugstack() {
    local kind=required
    [ "${1:-}" = --optional ] && { kind=optional; shift; }
    # omp_shim=none unless a test gives it: a shim installed on the machine must not change what tests see
    slurm_plugstack_raw "$kind $CS_PLUGIN policydir=$COSCHED_SRCDIR/lua/policies cosched=$COSCHED socket=$CS_SOCKET omp_shim=none $*"
}

slurm_plugstack_raw() {
    printf '%s\n' "$@" > "$SLURM_DIR/plugstack.conf.new"
    mv "$SLURM_DIR/plugstack.conf.new" "$SLURM_DIR/plugstack.conf"
}

# ------------------------------------------------------------------ states

slurm_wait_idle() {
    wait_for "${1:-30}" '[ "$(sinfo -h -N -o %T 2>/dev/null | sort -u)" = idle ]'
}

slurm_job_state() {
    local j s
    for j in "$@"; do
        s=$(scontrol -o show job "$j" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
        echo "${s:-GONE}"
    done
}

slurm_wait_job() {
    wait_for "${3:-30}" "[ \"\$(slurm_job_state $1)\" = $2 ]"
}

slurm_wait_gone() {
    wait_for "${2:-30}" "case \$(slurm_job_state $1) in PENDING|RUNNING|SUSPENDED|COMPLETING|CONFIGURING) false;; esac"
}

slurm_jobs() {
    squeue -h -o %i 2>/dev/null
    scontrol -o show job 2>/dev/null | grep -o '^JobId=[0-9]*' | cut -d= -f2
}

slurm_node_ok() {
    local s n
    for n in $SLURM_NODES; do
        s=$(sinfo -h -N -n "$n" -o '%T %E' 2>&1)
        echo "node $n: $s"
        case $s in
        idle*|mixed*|allocated*|completing*) ! [[ $s == *drain* ]] || return 1 ;;
        *) return 1 ;;
        esac
    done
}

slurm_step_cgroups() {
    local m n
    for n in $SLURM_NODES; do
        if [ "${SLURM_CGROUP:-v1}" = v2 ]; then
            for m in "$CGROUP_ROOT/system.slice/${n}_slurmstepd.scope" "$CGROUP_ROOT/system.slice/slurmd-$n.service"; do
                [ -d "$m" ] && find "$m" -type d 2>/dev/null
            done
            continue
        fi
        for m in "$CGROUP_ROOT"/*/; do
            [ -d "${m}slurm_$n" ] && find "${m}slurm_$n" -type d 2>/dev/null
        done
    done
    return 0
}

slurm_engine_start() {
    "$COSCHED" serve --socket "$CS_SOCKET" --quantum 2s --counters none --detach "$@" 3>&- ||
        { tail "$CS_SOCKET.log" >&2; return 1; }
    wait_for 30 '[ -n "$(slurm_engine_pid)" ]'
}

slurm_engine_pid() {
    "$COSCHED" status --json --socket "$CS_SOCKET" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["engine"]["pid"])' 2>/dev/null || true
}

slurm_engine_stop() {
    local p
    p=$(slurm_engine_pid)
    [ -z "$p" ] || { kill "$p"; wait_for "${1:-20}" "! kill -0 $p 2>/dev/null"; }
}

slurm_step_dir() {
    if [ "${SLURM_CGROUP:-v1}" = v2 ]; then
        # job_J, or (Slurm 26.05, CgroupJobIdPaths=no) the job's SLUID
        local scope=$CGROUP_ROOT/system.slice/${3:-$SLURM_NODE}_slurmstepd.scope sluid
        if [ ! -d "$scope/job_$1" ]; then
            sluid=$(scontrol -d -o show job "$1" 2>/dev/null | grep -o 'SLUID=[^ ]*' | cut -d= -f2)
            [ -z "$sluid" ] || { echo "$scope/$sluid/step_$2"; return; }
        fi
        echo "$scope/job_$1/step_$2"
    else
        echo "$CGROUP_ROOT/freezer/slurm_${3:-$SLURM_NODE}/uid_0/job_$1/step_$2"
    fi
}

# ------------------------------------------------------------------ internals

# _slurm_in_own_cgroup NODE COMMAND...: under cgroup/v2, run COMMAND (slurmd)
# in system.slice/slurmd-NODE.service: with systemd, as that service (the
# settings of Slurm's etc/slurmd.service; slurmd -D, as it runs there); without,
# in a cgroup of that name made here, as systemd would: Slurm's cgroup/v2
# takes the cgroup it starts in for its own and builds the stepd scope beside
# it in system.slice.  Under v1, just run it.
_slurm_in_own_cgroup() {
    local node=$1 cg=$CGROUP_ROOT/system.slice/slurmd-$1.service
    shift
    [ "${SLURM_CGROUP:-v1}" = v2 ] || { "$@"; return; }
    if slurm_under_systemd; then
        systemctl reset-failed "slurmd-$node.service" 2>/dev/null || true
        systemd-run --quiet --unit="slurmd-$node" --service-type=simple \
            -p Delegate=yes -p KillMode=process -p TasksMax=infinity \
            -p LimitNOFILE=131072 -p LimitMEMLOCK=infinity -p LimitSTACK=infinity \
            ${LD_LIBRARY_PATH:+-E LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} "$@" -D
        return
    fi
    mkdir -p "$cg" || return 1
    ( echo "$BASHPID" > "$cg/cgroup.procs" && exec "$@" )
}

slurm_under_systemd() { [ -d /run/systemd/system ]; }

_slurm_skip() {
    SLURM_SKIP=$1
    [ -n "${BATS_FILE_TMPDIR:-}" ] && echo "$1" > "$BATS_FILE_TMPDIR/slurm.skip"
    return 0
}

_slurm_fail() {
    local l
    {
        echo "slurm_start: $1; logs in $SLURM_DIR/log:"
        for l in "$SLURM_DIR"/log/*; do echo "== $l"; tail -20 "$l"; done
    } >&2
    [ -n "${BATS_FILE_TMPDIR:-}" ] && echo "$1 (see $SLURM_DIR/log)" > "$BATS_FILE_TMPDIR/slurm.failed"
    slurm_stop
    return 1
}

_slurm_alive() { local p; p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] && pid_alive "$p"; }

# Two free TCP ports in a row (slurmctld, slurmd), away from the defaults,
# searched from a place of this run's own (CS_RUN_ID): two runs starting
# their clusters at the same moment do not pick the same free pair.
_slurm_free_port() {
    local p used
    used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
    for ((p = 20000 + (10#$CS_RUN_ID % 2000) * 4; p < 30000; p += 2)); do
        grep -qx "$p" <<< "$used" || grep -qx "$((p + 1))" <<< "$used" || { echo "$p"; return; }
    done
    echo 26817
}

_slurm_write_conf() {
    local ncpu
    ncpu=$(nproc)
    cat > "$SLURM_CONF" <<EOF
# generated by tests/helpers/slurm.bash
ClusterName=cstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.sock
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/slurmd.%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
SlurmdDebug=debug
PlugStackConfig=$SLURM_DIR/plugstack.conf
ProctrackType=proctrack/cgroup
TaskPlugin=task/affinity,task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=30
InactiveLimit=0
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
EOF
    if [ -n "${SLURM_NODE_ADDRS:-}" ]; then
        # one node per machine, by address; slurmctld on the first
        local first=${SLURM_NODE_ADDRS%% *} na
        sed -i -e "s|^SlurmctldHost=.*|SlurmctldHost=${first%%=*}(${first#*=})|" \
            -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$SLURM_DIR/slurmd.%n.pid|" \
            -e "s|^SlurmdLogFile=.*|SlurmdLogFile=$SLURM_DIR/log/slurmd.%n.log|" "$SLURM_CONF"
        for na in $SLURM_NODE_ADDRS; do
            echo "NodeName=${na%%=*} NodeHostname=${na%%=*} NodeAddr=${na#*=} CPUs=$ncpu State=UNKNOWN" >> "$SLURM_CONF"
        done
    elif [ "$SLURM_NODES" = "$SLURM_NODE" ]; then
        echo "NodeName=$SLURM_NODE NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$ncpu State=UNKNOWN" >> "$SLURM_CONF"
    else
        # several slurmd on this machine: a port each, pid and log files per node name
        sed -i -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$SLURM_DIR/slurmd.%n.pid|" \
            -e "s|^SlurmdLogFile=.*|SlurmdLogFile=$SLURM_DIR/log/slurmd.%n.log|" "$SLURM_CONF"
        local n k=0
        for n in $SLURM_NODES; do
            echo "NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$(($2 + 2 * k)) CPUs=$ncpu State=UNKNOWN" >> "$SLURM_CONF"
            k=$((k + 1))
        done
    fi
    echo "PartitionName=test Nodes=${SLURM_NODES// /,} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4" >> "$SLURM_CONF"
    [ -z "${SLURM_EXTRA_CONF:-}" ] || printf '%s\n' "$SLURM_EXTRA_CONF" >> "$SLURM_CONF"

    if [ "${SLURM_CGROUP:-v1}" = v2 ] && slurm_under_systemd; then
        # a site's: Slurm asks systemd (dbus) for the stepd scope, Delegate=yes
        # hands it the controllers
        cat > "$SLURM_DIR/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
ConstrainCores=yes
EOF
    elif [ "${SLURM_CGROUP:-v1}" = v2 ]; then
        # no systemd, no dbus: Slurm builds its cgroups itself, and
        # CgroupAutomount then enables the controllers on the way down
        cat > "$SLURM_DIR/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
CgroupAutomount=yes
ConstrainCores=yes
EOF
    else
        cat > "$SLURM_DIR/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
ConstrainCores=yes
EOF
    fi
}
