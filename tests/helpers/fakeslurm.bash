# fakeslurm.bash - Slurm steps without Slurm, for the node engine's tests
# (tests/61-serve.bats): a fake tree in Slurm's cgroup/v2 layout inside the
# REAL cgroup2 mount, real processes in it, a real `cosched serve` on a
# private socket, and a raw protocol client (cs_client.py).
# `load helpers/common` first.
#
# Slurm's cgroup/v2 layout (22.05 without multiple-slurmd naming):
#   FAKE_ROOT/system.slice/slurmstepd.scope/job_<J>/step_<S>/{slurm,user/task_<T>}
# fake_layout switches to another release's (the engine finds a step from the
# task's own cgroup path, not from these names: launcher/control/slurm.c).
# The engine freezes step_<S>/user (cgroup.freeze) and, without a cgroup2
# cpuset controller, moves cores with sched_setaffinity on every thread below
# it.  step_<S>/slurm stands for slurmstepd and must never be frozen.
#
# FAKE_ROOT is <cgroup2 mount>/cosched-fakeslurm-<CS_RUN_ID>/<pid of the
# test's shell>: the run's id keeps runs side by side apart; the "cosched" name puts it in common.bash's view (cleanup_cosched thaws and
# removes it as a last resort); the pid of a live process of this bats run
# makes every other run's helpers treat it as foreign (they neither count nor
# touch it) while the test lives, and reclaim it if a dead test left it.
#
# Functions:
#   fake_setup                  in setup(): FAKE_ROOT, SOCKDIR (a 0755 dir for
#                               sockets that uid nobody can reach), SOCK
#   fake_test_setup             setup() of a tier on fake trees (61, 64): skip
#                               without root, cosched, python3 or cgroup.freeze,
#                               cd to the test's tmpdir, fake_setup
#   fake_teardown               in teardown(): stop the engines, kill every
#                               process in the tree, thaw, remove the tree and
#                               SOCKDIR; fails when something stays
#   fake_layout REL             the v2 layout of the following fake_step calls:
#                               22.05 (above), 23-25 (system.slice/
#                               node1_slurmstepd.scope/job_<J>), 25.11
#                               (CgroupSlice=hpc.slice: hpc.slice/
#                               node1_slurmstepd.scope/job_<J>), 26.05 (the
#                               job directory named by a SLUID, not job_<J>)
#   job_dir_name J              the name of job J's directory in that layout
#   cs_register_stepd J S PID [K=V...]  cs_register from inside step J.S's
#                               slurm/ (as slurmstepd registers its tasks);
#                               job=OTHER claims another job from there
#   fake_step J S               create step J.S (slurm/ and user/), with a
#                               "slurmstepd" (sleep) in slurm/
#   fake_task J S T NAME [--cpus LIST] [PROG ARGS...]
#                               start PROG (default: spin -t 2) inside
#                               step_S/user/task_T, bound to LIST if given;
#                               its pid goes to $BATS_TEST_TMPDIR/NAME.pid and
#                               to the variable NAME
#   fake_steps J:NAME...        fake_step J 0 for each J, then fake_task J 0 0
#                               NAME for each (spin -t 2 in task 0 of each)
#   fake_v1_step J S [UID]      the same in Slurm's cgroup v1 layout (below),
#                               owned by UID as Slurm 22.05 makes it
#   fake_v1_task J S T NAME [PROG ARGS...]
#                               PROG in step J.S's freezer and in its cpuset
#                               task_T (v1), as slurmstepd puts tasks
#   v1_dir freezer|cpuset J S [SUB]  a v1 step's directory
#   step_dir J S [SUB]          the step's directory (or SUB below it)
#   step_frozen J S             "frozen" of step_S/user/cgroup.events (0/1)
#   serve_start [ARGS...]       `cosched serve --socket $SOCK --quantum 100ms
#                               --counters none ARGS` in the background, with
#                               the variables of the array SERVE_ENV added to
#                               its environment, log in engine.log; ENGINE is
#                               its pid; waits until ping answers
#   cs_send REQUEST [OPTS...]   raw request as root (cs_client.py; escapes
#                               like \x00 decoded), reply on stdout
#   cs_send_as USER REQUEST ... the same as another user (runuser)
#   cs_register J S PID [K=V...] register a task (uid=0 cores=0-N by default)
#   status_json [USER]          `cosched status --json` (as USER)
#   step_field J.S FIELD [USER] one field of a step in status --json ("" if
#                               the step is not listed)
#   engine_field FIELD          one field of "engine" in status --json
#   quanta J.S                  quanta_run + quanta_waited of a step

CS_CLIENT=$COSCHED_SRCDIR/tests/helpers/cs_client.py
# uid nobody cannot run root's pyenv shims: the system interpreter for it
SYS_PYTHON=/usr/bin/python3
[ -x "$SYS_PYTHON" ] || SYS_PYTHON=$(command -v python3)

fake_setup() {
    local v2
    v2=$(_cs_v2_mount)
    FAKE_TOP=$v2/cosched-fakeslurm-$CS_RUN_ID
    FAKE_ROOT=$FAKE_TOP/$$
    FAKE_SCOPE=$FAKE_ROOT/system.slice/slurmstepd.scope
    mkdir -p "$FAKE_SCOPE"
    SOCKDIR=$(mktemp -d /tmp/cs61.XXXXXX)
    chmod 755 "$SOCKDIR"
    SOCK=$SOCKDIR/e.sock
    NCPU=$(nproc)
    ALL="0-$((NCPU - 1))"
    [ "$NCPU" -gt 1 ] || ALL=0
    ENGINE=
    SERVE_ENV=()
    FAKE_SLUID=
}

fake_test_setup() {
    requires root cosched python3 cgroup2_freeze
    cd "$BATS_TEST_TMPDIR"
    fake_setup
}

fake_layout() {
    FAKE_SLUID=
    case $1 in
    22.05) FAKE_SCOPE=$FAKE_ROOT/system.slice/slurmstepd.scope ;;
    23-25) FAKE_SCOPE=$FAKE_ROOT/system.slice/node1_slurmstepd.scope ;;
    25.11) FAKE_SCOPE=$FAKE_ROOT/hpc.slice/node1_slurmstepd.scope ;;
    26.05) FAKE_SCOPE=$FAKE_ROOT/system.slice/node1_slurmstepd.scope; FAKE_SLUID=1 ;;
    *) echo "fake_layout: unknown layout '$1' (22.05, 23-25, 25.11, 26.05)" >&2; return 1 ;;
    esac
    mkdir -p "$FAKE_SCOPE"
}

# a SLUID as 26.05 prints it: 's' and 13 characters of Crockford's base32
job_dir_name() {
    if [ -n "${FAKE_SLUID:-}" ]; then printf 's4ZDM8AJN%04d\n' "$1"; else echo "job_$1"; fi
}

step_dir() {
    local d
    d=$FAKE_SCOPE/$(job_dir_name "$1")/step_$2
    [ -n "${3:-}" ] && d=$d/$3
    echo "$d"
}

fake_step() {
    local d
    d=$(step_dir "$1" "$2")
    mkdir -p "$d/slurm" "$d/user"
    # slurmstepd's stand-in: lives in step_S/slurm, must never be frozen
    bash -c 'echo $$ > "$1/cgroup.procs" && exec sleep 100000' _ "$d/slurm" 3>&- &
    echo $! > "$BATS_TEST_TMPDIR/stepd_$1_$2.pid"
    disown $!           # killed in teardown: no "Killed" notice from this shell
    wait_for 5 "grep -qx $! '$d/slurm/cgroup.procs'"
}

fake_task() {
    local j=$1 s=$2 t=$3 name=$4 cpus='' d pid
    shift 4
    if [ "${1:-}" = --cpus ]; then cpus=$2; shift 2; fi
    [ $# -gt 0 ] || set -- "$PROGS/spin" -t 2
    d=$(step_dir "$j" "$s" "user/task_$t")
    mkdir -p "$d"
    # spin says when every thread runs
    [[ $1 == */spin ]] && set -- "$@" -p "$BATS_TEST_TMPDIR/$name.ready"
    if [ -n "$cpus" ]; then set -- taskset -c "$cpus" "$@"; fi
    # born inside the task's cgroup, as under slurmstepd: the shell moves
    # itself, then execs (taskset execs in turn: the pid stays the task's)
    bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$d" "$@" 3>&- &
    pid=$!
    disown "$pid"
    echo "$pid" > "$BATS_TEST_TMPDIR/$name.pid"
    printf -v "$name" '%s' "$pid"
    wait_for 5 "grep -qx $pid '$d/cgroup.procs'"
    if [[ $* == *" -p $BATS_TEST_TMPDIR/$name.ready"* ]]; then
        wait_for 10 test -s "$BATS_TEST_TMPDIR/$name.ready"
    fi
}

fake_steps() {
    local _js
    for _js in "$@"; do
        fake_step "${_js%%:*}" 0
    done
    for _js in "$@"; do
        fake_task "${_js%%:*}" 0 0 "${_js#*:}"
    done
}

# Slurm's cgroup v1 layout (proctrack/cgroup, task/cgroup), in the REAL v1
# freezer and cpuset hierarchies, below a cosched-fakeslurm-<CS_RUN_ID>/<pid> directory
# (reclaimed like the v2 tree):
#   <mnt>/cosched-fakeslurm-<CS_RUN_ID>/<pid>/slurm_fake/uid_<U>/job_<J>/step_<S>[/task_<T>]
# the tasks sit in the step's freezer and in the cpuset task_<T> below the
# step's.  Every cpuset level gets the machine's cpus and mems.
v1_dir() {
    local m g
    m=$(_cs_v1_mount "$1")
    local d=$m/cosched-fakeslurm-$CS_RUN_ID/$$/slurm_fake/uid_${FAKE_V1_UID:-0}/job_$2/step_$3
    for g in "$m"/cosched-fakeslurm-$CS_RUN_ID/$$/slurm_fake/uid_*/job_"$2"/step_"$3"; do
        [ -d "$g" ] && d=$g
    done
    [ -n "${4:-}" ] && d=$d/$4
    echo "$d"
}

_v1_mkcpuset() {   # DIR: create it and every parent below the mount, with cpus and mems
    local d=$1 m
    m=$(_cs_v1_mount cpuset)
    local rel=${d#"$m"/} cur=$m part
    for part in ${rel//\// }; do
        cur=$cur/$part
        [ -d "$cur" ] && continue
        mkdir "$cur"
        cat "$m/cpuset.cpus" > "$cur/cpuset.cpus"
        cat "$m/cpuset.mems" > "$cur/cpuset.mems"
    done
}

fake_v1_step() {
    local uid=${3:-0} f c
    FAKE_V1_UID=$uid
    f=$(v1_dir freezer "$1" "$2")
    c=$(v1_dir cpuset "$1" "$2")
    mkdir -p "$f"
    _v1_mkcpuset "$c"
    chown "$uid" "$f" "$c"
}

fake_v1_task() {
    local j=$1 s=$2 t=$3 name=$4 f c pid
    shift 4
    [ $# -gt 0 ] || set -- "$PROGS/spin" -t 2
    f=$(v1_dir freezer "$j" "$s")
    c=$(v1_dir cpuset "$j" "$s" "task_$t")
    _v1_mkcpuset "$c"
    chown "$FAKE_V1_UID" "$c"
    bash -c 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"' _ "$f" "$c" "$@" 3>&- &
    pid=$!
    disown "$pid"
    echo "$pid" > "$BATS_TEST_TMPDIR/$name.pid"
    printf -v "$name" '%s' "$pid"
    wait_for 5 "grep -qx $pid '$c/cgroup.procs'"
}

_fake_v1_teardown() {   # (-execdir: a test may leave trees deeper than PATH_MAX)
    local c m top p
    for c in freezer cpuset; do
        m=$(_cs_v1_mount "$c")
        top=$m/cosched-fakeslurm-$CS_RUN_ID/$$
        [ -d "$top" ] || continue
        find "$top" -name cgroup.procs -execdir cat {} + 2>/dev/null | while read -r p; do
            kill -KILL "$p" 2>/dev/null || true
        done
        [ "$c" = freezer ] && find "$top" -name freezer.state -execdir sh -c 'echo THAWED > "$1"' _ {} \; 2>/dev/null
    done
    for c in freezer cpuset; do
        m=$(_cs_v1_mount "$c")
        top=$m/cosched-fakeslurm-$CS_RUN_ID/$$
        [ -d "$top" ] || continue
        wait_for 5 "! find '$top' -name cgroup.procs -execdir cat {} + 2>/dev/null | grep -q ." || true
        find "$top" -depth -type d -execdir rmdir {} \; 2>/dev/null || true
        rmdir "$m/cosched-fakeslurm-$CS_RUN_ID" 2>/dev/null || true
    done
}

step_frozen() {
    awk '$1 == "frozen" { print $2 }' "$(step_dir "$1" "$2" user)/cgroup.events"
}

serve_start() {
    env "${SERVE_ENV[@]}" "$COSCHED" serve --socket "$SOCK" --quantum 100ms --counters none "$@" \
        2> "$BATS_TEST_TMPDIR/engine.log" 3>&- &
    ENGINE=$!
    echo "$ENGINE" > "$BATS_TEST_TMPDIR/engine.pid"
    wait_for 10 "cs_send 'COSCHED/1 ping' | grep -q '^OK '" || {
        cat "$BATS_TEST_TMPDIR/engine.log" >&2
        return 1
    }
}

cs_send() {
    python3 "$CS_CLIENT" "$SOCK" "$@"
}

cs_register_stepd() {
    local j=$1 s=$2 pid=$3
    shift 3
    local kv=" $*"
    [[ $kv == *" uid="* ]] || kv+=" uid=0"
    [[ $kv == *" cores="* ]] || kv+=" cores=$ALL"
    [[ $kv == *" job="* ]] || kv=" job=$j$kv"
    bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$(step_dir "$j" "$s" slurm)" \
        python3 "$CS_CLIENT" "$SOCK" "COSCHED/1 register step=$s pid=$pid$kv"
}

cs_send_as() {
    local user=$1
    shift
    runuser -u "$user" -- "$SYS_PYTHON" "$CS_CLIENT" "$SOCK" "$@"
}

cs_register() {
    local j=$1 s=$2 pid=$3
    shift 3
    local kv=" $*"
    [[ $kv == *" uid="* ]] || kv+=" uid=0"
    [[ $kv == *" cores="* ]] || kv+=" cores=$ALL"
    cs_send "COSCHED/1 register job=$j step=$s pid=$pid$kv"
}

status_json() {
    if [ -n "${1:-}" ]; then
        runuser -u "$1" -- "$COSCHED" status --json --socket "$SOCK"
    else
        "$COSCHED" status --json --socket "$SOCK"
    fi
}

step_field() {
    status_json "${3:-}" | python3 -c '
import json, sys
d = json.load(sys.stdin)
want, field = sys.argv[1], sys.argv[2]
for s in d["steps"]:
    if "%d.%d" % (s["job"], s["step"]) == want:
        v = s[field]
        print(json.dumps(v) if isinstance(v, (bool, type(None))) else v)
' "$1" "$2"
}

engine_field() {
    status_json | python3 -c 'import json, sys; print(json.load(sys.stdin)["engine"][sys.argv[1]])' "$1"
}

quanta() {
    status_json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["steps"]:
    if "%d.%d" % (s["job"], s["step"]) == sys.argv[1]:
        print(s["quanta_run"] + s["quanta_waited"])
' "$1"
}

# Stop a cosched (engine or daemon) whose pid is in FILE: SIGTERM, then SIGKILL.
_fake_stop_pidfile() {
    local p
    [ -f "$1" ] || return 0
    read -r p < "$1" || return 0
    [[ $p =~ ^[0-9]+$ ]] && pid_alive "$p" && _cs_ours_pid "$p" || return 0
    kill -TERM "$p" 2>/dev/null || true
    wait_for 5 _cs_gone "$p" 2>/dev/null || { echo "fake_teardown: SIGKILL to $p" >&2; kill -KILL "$p" 2>/dev/null; }
    wait "$p" 2>/dev/null || true
}

fake_teardown() {
    local f d p left=()
    for f in "$BATS_TEST_TMPDIR"/engine*.pid "$BATS_TEST_TMPDIR"/daemon*.pid; do
        _fake_stop_pidfile "$f"
    done
    if [ -n "${FAKE_ROOT:-}" ] && [ -d "$FAKE_ROOT" ]; then
        # every process in the tree: SIGKILL (a task frozen by cgroup.freeze dies on it), then thaw
        for f in $(find "$FAKE_ROOT" -name cgroup.procs 2>/dev/null); do
            while read -r p; do
                kill -KILL "$p" 2>/dev/null || true
            done < "$f"
        done
        for d in $(find "$FAKE_ROOT" -type d 2>/dev/null); do
            [ "$(cat "$d/cgroup.freeze" 2>/dev/null)" = 0 ] || { echo 0 > "$d/cgroup.freeze"; } 2>/dev/null || true
        done
        wait_for 5 "grep -qx 'populated 0' '$FAKE_ROOT/cgroup.events'" || true
        find "$FAKE_ROOT" -depth -type d -execdir rmdir {} \; 2>/dev/null || true
        rmdir "$FAKE_TOP" 2>/dev/null || true
        [ -d "$FAKE_ROOT" ] && left+=("fake cgroup tree left: $FAKE_ROOT")
    fi
    _fake_v1_teardown
    [ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
    cleanup_cosched
    [ ${#left[@]} -eq 0 ] && return 0
    printf 'fake_teardown: %s\n' "${left[@]}" >&2
    return 1
}
