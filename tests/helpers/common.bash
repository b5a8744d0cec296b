# common.bash - sourced by every .bats file (`load helpers/common`).
#
# Where things are:
#   COSCHED  the cosched binary          ($COSCHED_BUILDDIR/cosched)
#   PROGS    the test programs           ($COSCHED_BUILDDIR/tests/progs: spin, ompwork)
#   DEMO     the demo workloads          ($COSCHED_BUILDDIR/share/demo: stream, matmul, compute)
# `make check` exports COSCHED_BUILDDIR and COSCHED_SRCDIR; run by hand:
#   COSCHED_BUILDDIR=$PWD COSCHED_SRCDIR=$PWD bats tests/00-build.bats
#
# Rules for tests (see style.md, "Tests"):
#   - never sleep to synchronise: wait for the condition with `wait_for TIMEOUT CMD`;
#   - every assertion prints what it got and what it wanted when it fails;
#   - start background processes with a pid file in $BATS_TEST_TMPDIR (spin -p
#     FILE.pid) and call cleanup_cosched from teardown.
#
# "Ours": bats exports BATS_TEST_TMPDIR and BATS_RUN_TMPDIR, so every process a
# test starts (cosched, its guardian, its jobs) carries them in its environment.
# The helpers use that to tell this run's processes and cgroups from those of
# anybody else on the machine (another bats run, a benchmark, a demo), which
# they neither count nor touch.  cosched's cgroups are <own cgroup>/cosched/
# <engine pid>/job<N>: a group belongs to the engine pid in its path.
#
# CS_RUN_ID: this bats run's identity, six digits derived from its
# BATS_RUN_TMPDIR, set once here and carried by every name a test makes on
# the machine (the fake Slurm trees cosched-fakeslurm-<id>, the Slurm node
# cs<id> with its cgroups, ports and spool; sockets and spool directories are
# mktemp'ed), so that two runs at once - two clones, a reviewer's tier beside
# `make check` - neither meet nor count each other's things (tests/README).

COSCHED_SRCDIR=${COSCHED_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
COSCHED_BUILDDIR=${COSCHED_BUILDDIR:-$COSCHED_SRCDIR}
COSCHED=$COSCHED_BUILDDIR/cosched
PROGS=$COSCHED_BUILDDIR/tests/progs
DEMO=$COSCHED_BUILDDIR/share/demo
CGROUP_ROOT=${CGROUP_ROOT:-/sys/fs/cgroup}
if [ -z "${CS_RUN_ID:-}" ]; then
    CS_RUN_ID=$(printf '%s' "${BATS_RUN_TMPDIR:-$$}" | cksum | awk '{ printf "%06d", $1 % 1000000 }')
fi
# when this run started (its first load of this file): the ctime of a marker
[ -z "${BATS_RUN_TMPDIR:-}" ] || [ -e "$BATS_RUN_TMPDIR/cs-run.t0" ] || : > "$BATS_RUN_TMPDIR/cs-run.t0"

# ------------------------------------------------------------------ skipping

# requires FEATURE...: skip the test, saying why, unless every FEATURE is here.
#   root, nonroot, multicore, openmp, cosched, slurm, python3,
#   cgroup1 (v1 freezer and cpuset mounted, writable), cgroup2 (a writable
#   cgroup2 mount), cgroup2_freeze (cgroup.freeze, Linux >= 5.2),
#   cgroup2_cpuset (cpuset among the cgroup2 controllers)
# An unknown FEATURE fails the test: a typo must not turn into a silent skip.
requires() {
    local f m
    for f in "$@"; do
        case $f in
        root)
            [ "$(id -u)" -eq 0 ] || skip "needs root" ;;
        nonroot)
            [ "$(id -u)" -ne 0 ] || skip "needs a non-root user" ;;
        multicore)
            [ "$(nproc)" -ge 2 ] || skip "needs at least 2 cpus (nproc is $(nproc))" ;;
        openmp)
            [ -x "$PROGS/ompwork" ] || skip "needs $PROGS/ompwork (make check builds it)"
            OMP_NUM_THREADS=2 "$PROGS/ompwork" -v -n 1 2>&1 >/dev/null | grep -q ' 2 thread' ||
                skip "needs OpenMP (built without it: configure found no OpenMP flag)" ;;
        cosched)
            [ -x "$COSCHED" ] || skip "needs $COSCHED (not built)" ;;
        slurm)
            command -v srun >/dev/null && command -v slurmd >/dev/null && command -v slurmctld >/dev/null ||
                skip "needs Slurm (srun, slurmd, slurmctld)" ;;
        python3)
            command -v python3 >/dev/null || skip "needs python3" ;;
        glpk)
            ! "$COSCHED" simulate --help | grep -q 'built without GLPK' ||
                skip "needs GLPK (cosched simulate --bound; configure found no libglpk-dev)" ;;
        cgroup1)
            m=$(_cs_v1_mount freezer)
            [ -n "$m" ] && [ -w "$m" ] || skip "needs a writable cgroup v1 freezer hierarchy (root, v1 or hybrid mode)"
            m=$(_cs_v1_mount cpuset)
            [ -n "$m" ] && [ -w "$m" ] || skip "needs a writable cgroup v1 cpuset hierarchy (root, v1 or hybrid mode)" ;;
        cgroup2)
            m=$(_cs_v2_mount)
            [ -n "$m" ] && [ -w "$m" ] || skip "needs a writable cgroup2 mount (root)" ;;
        cgroup2_freeze)
            m=$(_cs_v2_mount)
            [ -n "$m" ] && [ -w "$m" ] || skip "needs a writable cgroup2 mount (root)"
            _cs_kernel_at_least 5 2 || skip "needs cgroup.freeze (Linux >= 5.2; this is $(uname -r))" ;;
        cgroup2_cpuset)
            m=$(_cs_v2_mount)
            [ -n "$m" ] || skip "needs cgroup2 with the cpuset controller (no cgroup2 mount)"
            grep -qw cpuset "$m/cgroup.controllers" ||
                skip "needs the cpuset controller in cgroup2 ($m/cgroup.controllers lacks it; it may be bound to v1)" ;;
        *)
            echo "requires: unknown feature '$f' (known: root nonroot multicore openmp cosched slurm python3" \
                "cgroup1 cgroup2 cgroup2_freeze cgroup2_cpuset)" >&2
            return 1 ;;
        esac
    done
}

# ------------------------------------------------------------------ waiting

# wait_for TIMEOUT_S CMD [ARGS...]: run CMD every 20 ms until it succeeds;
# fail after TIMEOUT_S seconds (decimals allowed), printing the command, its
# last status and its last output.
#
# With several words, CMD ARGS are run as given - and $(...) in them were
# expanded once, by the caller, before wait_for started.  To re-evaluate a
# substitution on every try, pass the whole command as one string:
#     wait_for 5 'test "$(freezer_state_of "$b")" = FROZEN'
# or call a function that reads the state itself (job_is_held "$b").
wait_for() {
    local timeout=${1:-} tries=0 out='' rc=0 deadline
    if [ $# -lt 2 ] || ! [[ $timeout =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
        echo "wait_for: usage: wait_for TIMEOUT_S CMD [ARGS...] (got: $*)" >&2
        return 2
    fi
    shift
    deadline=$(($(_cs_now_us) + $(_cs_us "$timeout")))
    while :; do
        tries=$((tries + 1))
        if [ $# -eq 1 ]; then
            out=$(eval "$1" 2>&1) && return 0 || rc=$?
        else
            out=$("$@" 2>&1) && return 0 || rc=$?
        fi
        [ "$(_cs_now_us)" -lt "$deadline" ] || break
        sleep 0.02
    done
    {
        printf 'wait_for: gave up after %s s (%d tries) waiting for:' "$timeout" "$tries"
        [ $# -eq 1 ] && printf ' %s' "$1" || printf ' %q' "$@"
        printf '\n  last status %d, last output: %s\n' "$rc" "${out:-(none)}"
    } >&2
    return 1
}

# ------------------------------------------------------------------ /proc

# expand_cpus LIST: "0-2,5" -> "0 1 2 5"
expand_cpus() {
    local r out=() i
    IFS=, read -ra rs <<< "$1"
    for r in "${rs[@]}"; do
        if [[ $r == *-* ]]; then
            for ((i = ${r%-*}; i <= ${r#*-}; i++)); do out+=("$i"); done
        else
            out+=("$r")
        fi
    done
    echo "${out[*]}"
}

# disjoint LIST1 LIST2: no cpu in both
disjoint() {
    local c d
    for c in $(expand_cpus "$1"); do
        for d in $(expand_cpus "$2"); do [ "$c" != "$d" ] || return 1; done
    done
}

# task_cpus PID: the Cpus_allowed_list of every thread of PID, unique, sorted
# (one line when all threads agree).  Nothing when PID is gone.
task_cpus() {
    local f key val
    for f in /proc/"$1"/task/*/status; do
        [ -r "$f" ] || continue
        while read -r key val; do
            [ "$key" = Cpus_allowed_list: ] && { echo "$val"; break; }
        done 2>/dev/null < "$f"
    done | sort -u
}

# cg2_look CG PID WHAT: one consistent look at cgroup v2 cgroup CG holding
# task PID (a job's or a Slurm step's): "frozen", or "running CPUS" after
# checking that every thread of PID may run on exactly CG's effective cpus
# (WHAT names it in the failure), or nothing when CG changed while it was
# read (a switch in between: that look proves nothing).
cg2_look() {
    local ev1 ev2 eff1 eff2 th
    ev1=$(tr '\n' ' ' < "$1/cgroup.events") eff1=$(cat "$1/cpuset.cpus.effective")
    th=$(task_cpus "$2")
    ev2=$(tr '\n' ' ' < "$1/cgroup.events") eff2=$(cat "$1/cpuset.cpus.effective")
    [ "$ev1" = "$ev2" ] && [ "$eff1" = "$eff2" ] || return 0
    case $ev1 in
    *"frozen 1"*) echo frozen ;;
    *"frozen 0"*)
        assert_equal "$th" "$eff1" "$3: threads' Cpus_allowed_list vs $1/cpuset.cpus.effective"
        echo "running $eff1" ;;
    esac
}

# proc_state PID: the state letter (R S D T t Z ...) of PID; nothing when gone.
proc_state() {
    _cs_stat "/proc/$1/stat" || return 1
    echo "${_CS_F[0]}"
}

# all_threads_state PID LETTER: true when PID has threads and every one of them
# is in state LETTER (e.g. T: stopped by SIGSTOP).
all_threads_state() {
    local f n=0
    for f in /proc/"$1"/task/*/stat; do
        _cs_stat "$f" || continue
        [ "${_CS_F[0]}" = "$2" ] || return 1
        n=$((n + 1))
    done
    [ "$n" -gt 0 ]
}

# A hardware PMU is registered with perf.
has_pmu() {
    local d
    for d in /sys/bus/event_source/devices/{cpu,cpu_core,cpu_atom,armv8_pmuv3,armv8_pmuv3_0}; do
        [ -e "$d" ] && return 0
    done
    return 1
}

# A cosched of another build is alive: a second clone's run side by side
# (tests/README).  Its engine, at its start, thaws every Slurm step it finds
# frozen on the node (a node has one engine), this run's steps included.
foreign_cosched() {
    local p exe
    for p in $(pgrep -x cosched); do
        exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
        [[ $exe == "$COSCHED_BUILDDIR"/* ]] || return 0
    done
    return 1
}

# pid_alive PID: PID exists and is not a zombie.
pid_alive() {
    _cs_stat "/proc/$1/stat" && [ "${_CS_F[0]}" != Z ] && [ "${_CS_F[0]}" != X ]
}

# cpu_ticks PID: utime + stime of PID (all its threads), in clock ticks.
cpu_ticks() {
    _cs_stat "/proc/$1/stat" || return 1
    echo $((_CS_F[11] + _CS_F[12]))
}

# freezer_state_of PID: freezer.state of PID's cgroup v1 freezer group
# (THAWED, FREEZING, FROZEN); nothing when PID is gone, there is no v1
# freezer or PID is in its root group (which cannot be frozen).
freezer_state_of() {
    local m path
    m=$(_cs_v1_mount freezer)
    [ -n "$m" ] || return 0
    path=$(awk -F: '$2 ~ /(^|,)freezer(,|$)/ { print $3; exit }' "/proc/$1/cgroup" 2>/dev/null) || return 0
    [ -n "$path" ] && [ "$path" != / ] && [ -r "$m$path/freezer.state" ] || return 0
    cat "$m$path/freezer.state" 2>/dev/null || true
}

# cgroup2_frozen_of PID: 1 when PID's cgroup2 group is frozen (the "frozen"
# field of cgroup.events: the effective state, frozen ancestors included),
# else 0; nothing when PID is gone, there is no cgroup2 or PID is in the root.
cgroup2_frozen_of() {
    local m path
    m=$(_cs_v2_mount)
    [ -n "$m" ] || return 0
    path=$(awk -F: '$1 == "0" && $2 == "" { print $3; exit }' "/proc/$1/cgroup" 2>/dev/null) || return 0
    [ -n "$path" ] && [ "$path" != / ] && [ -r "$m$path/cgroup.events" ] || return 0
    awk '$1 == "frozen" { print $2 }' "$m$path/cgroup.events" 2>/dev/null || true
}

# ------------------------------------------------------------------ assertions

# assert_equal GOT WANT [WHAT]
assert_equal() {
    [ "$1" = "$2" ] && return 0
    printf '%s differs\n  got:  %s\n  want: %s\n' "${3:-value}" "$1" "$2" >&2
    return 1
}

# assert_contains HAYSTACK NEEDLE [WHAT]: NEEDLE is a fixed string.
assert_contains() {
    [[ $1 == *"$2"* ]] && return 0
    printf '%s does not contain the expected text\n  want: %s\n  got:  %s\n' "${3:-output}" "$2" "$1" >&2
    return 1
}

# check_cgroup_value FILE WANT: the content of a cgroup file.
check_cgroup_value() {
    local got
    got=$(cat "$1" 2>&1) || { echo "check_cgroup_value: cannot read $1: $got" >&2; return 1; }
    assert_equal "$got" "$2" "$1"
}

# no_cosched_leftovers: nothing cosched made is left behind.  Fails, listing
# everything it found, when there is
#   - a directory named cosched* (or below one) under the cpuset, freezer,
#     cpuacct or cgroup2 hierarchies,
#   - a FROZEN/FREEZING v1 freezer group or a frozen cgroup2 group anywhere,
#   - a live process of this bats run whose name starts with cosched.
# Only what this run made is counted: not the groups of a live cosched that
# is not of this run (another bats run, someone's benchmark), nor groups made
# before this run started (another run's, or a crash's: cleanup_cosched
# reclaims those whose engine is dead), nor the Slurm cgroups of another
# run's node (cs<other id>).
no_cosched_leftovers() {
    # another run's engine makes and removes the cosched parent groups
    # (<cgroup>/cosched) as it starts and stops: seen in between, a parent
    # without children looks like ours.  What is found is looked for again
    # (up to 3 times, 1 s apart): a leftover stays, another run's moment passes.
    local try
    for try in 1 2 3; do
        _cs_leftovers 2>/dev/null && return 0
        sleep 1
    done
    _cs_leftovers
}

_cs_leftovers() {
    local found=() d s p comm
    _CS_FOREIGN=()
    while read -r d; do
        [ -n "$d" ] && ! _cs_foreign_cgroup "$d" && ! _cs_not_this_run "$d" && found+=("cgroup left: $d")
    done < <(_cs_cosched_cgroups)
    while read -r d; do
        [ -n "$d" ] || continue
        { read -r s < "$d/freezer.state"; } 2>/dev/null || continue
        [ "$s" = THAWED ] || _cs_foreign_cgroup "$d" || _cs_not_this_run "$d" || found+=("freezer $s: $d")
    done < <(_cs_find_dirs "$(_cs_v1_mount freezer)")
    while read -r d; do
        [ -n "$d" ] && [ -r "$d/cgroup.freeze" ] || continue
        { read -r s < "$d/cgroup.freeze"; } 2>/dev/null || continue
        [ "$s" = 0 ] || _cs_foreign_cgroup "$d" || _cs_not_this_run "$d" || found+=("cgroup2 frozen: $d")
    done < <(_cs_find_dirs "$(_cs_v2_mount)")
    while read -r p _ _ comm; do
        [[ $comm == cosched* ]] || continue
        _cs_ours_pid "$p" || continue
        found+=("process left: $p ($comm): $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)")
    done < <(_cs_ps | awk '$4 ~ /^cosched/')
    [ ${#found[@]} -eq 0 ] && return 0
    printf 'no_cosched_leftovers: %s\n' "${found[@]}" >&2
    return 1
}

# ------------------------------------------------------------------ teardown

# cleanup_cosched [DIR]: teardown for every test; never fails the test, says
# on stderr what it had to clean.  DIR defaults to $BATS_TEST_TMPDIR.
#   1. collect the processes to kill: the pids in DIR/*.pid (every numeric
#      line), live processes of our programs (cosched, spin, ompwork, the
#      demos) and orphans that carry this test's BATS_TEST_TMPDIR, and all
#      their descendants - only processes of this bats run (a pid may have
#      been reused), never this shell or its ancestors;
#   2. thaw every cosched v1 freezer and cgroup2 group that is not another
#      run's, kill the processes (SIGKILL; SIGCONT for stopped ones), thaw
#      again (a dying cosched may have frozen meanwhile), wait until they are
#      gone and reap those that are our children;
#   3. move the tasks left in cosched cgroups to the hierarchy's root and
#      remove the groups, deepest first.
cleanup_cosched() {
    local dir=${1:-${BATS_TEST_TMPDIR:-.}} f line p m d
    local -A kill=() keep=()
    local -a pids=()
    _CS_FOREIGN=()

    # never ourselves or an ancestor
    p=$BASHPID
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        keep[$p]=1
        p=$(_cs_ppid "$p")
    done
    keep[$$]=1

    for f in "$dir"/*.pid; do
        [ -f "$f" ] || continue
        while read -r line; do
            [[ $line =~ ^[0-9]+$ ]] && pid_alive "$line" && pids+=("$line")
        done < "$f"
    done
    mapfile -t -O "${#pids[@]}" pids < <(_cs_our_strays)
    for p in $(_cs_with_descendants "${pids[@]}"); do
        # a pid file may name a process long gone whose pid was reused
        [ -z "${keep[$p]:-}" ] && [ "$p" -gt 1 ] && _cs_ours_pid "$p" && kill[$p]=1
    done

    _cs_thaw_all
    if [ ${#kill[@]} -gt 0 ]; then
        echo "cleanup_cosched: killing ${!kill[*]}" >&2
        kill -KILL "${!kill[@]}" 2>/dev/null || true
        kill -CONT "${!kill[@]}" 2>/dev/null || true
        _cs_thaw_all
        for p in "${!kill[@]}"; do
            wait_for 5 _cs_gone "$p" || { _cs_thaw_all; kill -KILL "$p" 2>/dev/null; wait_for 5 _cs_gone "$p"; } || true
            wait "$p" 2>/dev/null || true
        done
    fi

    for m in $(_cs_v1_mounts) $(_cs_v2_mount); do
        while read -r d; do
            [ -n "$d" ] && ! _cs_foreign_cgroup "$d" && ! _cs_live_run_cgroup "$d" || continue
            for f in "$d/cgroup.procs" "$d/tasks"; do
                [ -r "$f" ] || continue
                while read -r p; do
                    { echo "$p" > "$m/cgroup.procs"; } 2>/dev/null || true
                done < "$f"
            done
            [ -f "$d/freezer.state" ] && { echo THAWED > "$d/freezer.state"; } 2>/dev/null || true
            [ -f "$d/cgroup.freeze" ] && { echo 0 > "$d/cgroup.freeze"; } 2>/dev/null || true
            rmdir "$d" 2>/dev/null && echo "cleanup_cosched: removed $d" >&2 || true
        done < <(_cs_cosched_cgroups "$m" | sort -r)
    done
    return 0
}

# ------------------------------------------------------------------ internals

_cs_now_us() { local t=$EPOCHREALTIME; echo "${t//[!0-9]/}"; }

_cs_us() {  # seconds (decimal) -> microseconds
    local s=$1 i f
    i=${s%%.*}
    [[ $s == *.* ]] && f=${s#*.} || f=
    f=${f}000000
    echo $((10#$i * 1000000 + 10#${f:0:6}))
}

_cs_kernel_at_least() {
    local v maj min
    v=$(uname -r)
    maj=${v%%.*} v=${v#*.} min=${v%%[!0-9]*}
    [ "$maj" -gt "$1" ] || { [ "$maj" -eq "$1" ] && [ "${min:-0}" -ge "$2" ]; }
}

# Mount point of the v1 hierarchy holding controller $1 (empty if none).
_cs_v1_mount() {
    awk -v c="$1" '{
        for (i = 7; i <= NF && $i != "-"; i++) ;
        if ($(i + 1) != "cgroup") next
        n = split($(i + 3), o, ",")
        for (k = 1; k <= n; k++) if (o[k] == c) { print $5; exit }
    }' /proc/self/mountinfo
}

# Mount points of the v1 hierarchies that cosched uses.
_cs_v1_mounts() {
    local c
    for c in cpuset freezer cpuacct; do _cs_v1_mount "$c"; done | sort -u
}

_cs_v2_mount() {
    awk '{ for (i = 7; i <= NF && $i != "-"; i++) ; if ($(i + 1) == "cgroup2") { print $5; exit } }' /proc/self/mountinfo
}

# All directories under $1 (nothing if $1 is empty or missing).
_cs_find_dirs() {
    [ -n "${1:-}" ] && [ -d "$1" ] || return 0
    find "$1" -mindepth 1 -type d 2>/dev/null || true
}

# Directories named cosched* and everything below them, in the given mounts
# (default: the cpuset, freezer and cpuacct v1 hierarchies and cgroup2).
_cs_cosched_cgroups() {
    local m d
    [ $# -gt 0 ] || set -- $(_cs_v1_mounts) $(_cs_v2_mount)
    for m in "$@"; do
        [ -n "$m" ] && [ -d "$m" ] || continue
        find "$m" -mindepth 1 -type d -name 'cosched*' -prune -print 2>/dev/null | while read -r d; do
            find "$d" -type d 2>/dev/null || true
        done
    done
    return 0
}

# _cs_stat FILE: split a /proc stat file into _CS_F, the fields after the
# command name (which may hold spaces and parentheses: cut at the last ") "),
# so _CS_F[0] is the state, [1] the ppid, [11] utime, [12] stime.
# Builtins only: the helpers read every process on the machine.
_cs_stat() {
    local s=''
    { IFS= read -r -d '' s < "$1"; } 2>/dev/null || true
    [ -n "$s" ] || return 1
    s=${s##*) }
    # only numbers and the state letter are left: plain word splitting is safe
    _CS_F=($s)
}

_cs_ppid() {
    _cs_stat "/proc/$1/stat" && echo "${_CS_F[1]}"
    return 0
}

# The value of variable $2 in the environment of process $1 (empty if unset
# or unreadable).
_cs_env_of() {
    local e
    e=$(grep -z -m1 "^$2=" "/proc/$1/environ" 2>/dev/null | tr -d '\0') || true
    echo "${e#*=}"
}

# True when process $1 was started by this bats run.
_cs_ours_pid() {
    [ -n "${BATS_RUN_TMPDIR:-}" ] && [ "$(_cs_env_of "$1" BATS_RUN_TMPDIR)" = "$BATS_RUN_TMPDIR" ]
}

# True when process $1 is alive and not of this bats run.  Answers are cached
# in _CS_FOREIGN, which the public helpers empty when they start.
declare -gA _CS_FOREIGN=()
_cs_foreign_pid() {
    if [ -z "${_CS_FOREIGN[$1]:-}" ]; then
        if pid_alive "$1" && ! _cs_ours_pid "$1"; then _CS_FOREIGN[$1]=y; else _CS_FOREIGN[$1]=n; fi
    fi
    [ "${_CS_FOREIGN[$1]}" = y ]
}

# The engine pid in .../cosched*/PID/... of a cgroup path (empty if none).
_cs_cgroup_owner() {
    [[ $1 =~ /cosched[^/]*/([0-9]+)(/|$) ]] && echo "${BASH_REMATCH[1]}"
    return 0
}

# A group that is not ours: that of a live cosched not of this run, or one
# (its engine dead, e.g. while that engine's guardian cleans up) holding a
# live process not of this run; a shared cosched* dir holding such a group.
_cs_foreign_cgroup() {
    local c f p
    if [[ $1 =~ /cosched[^/]*/([0-9]+)(/|$) ]]; then
        _cs_foreign_pid "${BASH_REMATCH[1]}" && return 0
        for f in "$1"/cgroup.procs "$1"/*/cgroup.procs; do
            [ -r "$f" ] || continue
            while read -r p; do
                _cs_foreign_pid "$p" && return 0
            done < "$f"
        done
        return 1
    fi
    for c in "$1"/[0-9]*; do
        [ -d "$c" ] && _cs_foreign_cgroup "$c" && return 0
    done
    return 1
}

# True when cgroup DIR is not this run's to count: made before this run
# started (its ctime, which kernfs sets at mkdir and creating children does
# not change, before that of $BATS_RUN_TMPDIR/cs-run.t0), or in the Slurm tree of a test node of another run (slurm_cs<id>,
# cs<id>_slurmstepd.scope, slurmd-cs<id>.service; ours are cs$CS_RUN_ID[b]).
_cs_not_this_run() {
    local t
    if [[ $1 =~ /(slurm_|slurmd-)?cs([0-9]{6})b?(_slurmstepd\.scope|\.service)?(/|$) ]] &&
        [ "${BASH_REMATCH[2]}" != "$CS_RUN_ID" ]; then
        return 0
    fi
    [ -n "${_CS_RUN_T0:-}" ] || _CS_RUN_T0=$(stat -c %Z "${BATS_RUN_TMPDIR:-/nonexistent}/cs-run.t0" 2>/dev/null) ||
        return 1
    t=$(stat -c %Z "$1" 2>/dev/null) || return 1
    [ "$t" -lt "$_CS_RUN_T0" ]
}

# A cgroup of any live cosched run (ours have been killed by now): keep it.
_cs_live_run_cgroup() {
    local o comm
    o=$(_cs_cgroup_owner "$1")
    [ -n "$o" ] && pid_alive "$o" || return 1
    { read -r comm < "/proc/$o/comm"; } 2>/dev/null || true
    [[ ${comm:-} == cosched* ]]
}

_cs_gone() { ! pid_alive "$1"; }

# Live processes carrying this test's BATS_TEST_TMPDIR that are our programs,
# or orphans (parent 1) of any kind.
_cs_our_strays() {
    local p pp comm exe
    [ -n "${BATS_TEST_TMPDIR:-}" ] || return 0
    while read -r p pp _ comm; do
        case $comm in
        cosched*|spin|ompwork|stream|matmul|compute)
            exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
            [[ $exe == "$COSCHED_BUILDDIR"/* ]] || continue ;;
        *)
            [ "$pp" = 1 ] || continue ;;
        esac
        [ "$(_cs_env_of "$p" BATS_TEST_TMPDIR)" = "$BATS_TEST_TMPDIR" ] && echo "$p"
    done < <(_cs_ps | awk '$2 == 1 || $4 ~ /^(cosched.*|spin|ompwork|stream|matmul|compute)$/')
    return 0
}

# _cs_ps: "PID PPID STATE COMM" of every live (not zombie) process.  One awk
# over all stat files: loops in bash are slow under bats' DEBUG trap.
_cs_ps() {
    # comm may hold spaces and parentheses: it ends at the last ") "
    cat /proc/[0-9]*/stat 2>/dev/null | awk '{
        l = $0; o = index(l, " ("); c = 0
        for (i = length(l); i > o; i--) if (substr(l, i, 2) == ") ") { c = i; break }
        if (!o || !c) next
        split(substr(l, c + 2), f, " ")
        if (f[1] == "Z" || f[1] == "X") next
        print substr(l, 1, o - 1), f[2], f[1], substr(l, o + 2, c - o - 2)
    }'
}

# The given pids and all their descendants.
_cs_with_descendants() {
    [ $# -gt 0 ] || return 0
    _cs_ps | awk -v roots="$*" '
        { kids[$2] = kids[$2] " " $1 }
        END {
            n = split(roots, q, " ")
            for (h = 1; h <= n; h++) {
                p = q[h]
                if (p in seen) continue
                seen[p] = 1; print p
                m = split(kids[p], k, " ")
                for (j = 1; j <= m; j++) q[++n] = k[j]
            }
        }'
}

# Thaw every cosched group that is not another run's (v1 freezer, cgroup2).
_cs_thaw_all() {
    local d
    while read -r d; do
        [ -n "$d" ] && ! _cs_foreign_cgroup "$d" || continue
        if [ -f "$d/freezer.state" ] && [ "$(cat "$d/freezer.state" 2>/dev/null)" != THAWED ]; then
            { echo THAWED > "$d/freezer.state"; } 2>/dev/null && echo "cleanup_cosched: thawed $d" >&2
        fi
        if [ -f "$d/cgroup.freeze" ] && [ "$(cat "$d/cgroup.freeze" 2>/dev/null)" != 0 ]; then
            { echo 0 > "$d/cgroup.freeze"; } 2>/dev/null && echo "cleanup_cosched: thawed $d" >&2
        fi
    done < <(_cs_cosched_cgroups "$(_cs_v1_mount freezer)" "$(_cs_v2_mount)")
    return 0
}

# shipped_data_only: cosched finds the source tree's profiles and policies
# (COSCHED_DATADIR) and nothing of the user's: HOME is the test's directory
# (no ~/.config/cosched/profiles, no ~/.cache/cosched/profiles store) and
# XDG_CACHE_HOME is unset.
shipped_data_only() {
    export COSCHED_DATADIR=$COSCHED_SRCDIR
    export HOME=$BATS_TEST_TMPDIR
    unset XDG_CACHE_HOME
}

# lua_needed: set LUA (default lua5.4) and fail, saying which Debian package
# has it, when that interpreter is missing (for the pure-Lua tiers' setup).
lua_needed() {
    LUA=${LUA:-lua5.4}
    command -v "$LUA" >/dev/null || { echo "the $LUA interpreter is missing (Debian package lua5.4)" >&2; return 1; }
}

# lua_with MODULE NAME CODE: run (bats' run) CODE in $LUA with NAME = require
# MODULE, the module from the source tree (lua/).
lua_with() {
    run "$LUA" -e "package.path = '$COSCHED_SRCDIR/lua/?.lua;' .. package.path
                   local $2 = require '$1'
                   $3"
}

# table2_rows_pass BEFORE AFTER: every application of paper 001's Table 2
# (tests/fixtures/table2.csv, 19 rows) has a passing line "ok N - BEFORE<app>AFTER"
# in $output (extended regular expressions; the app's dots are escaped).
table2_rows_pass() {
    local app n=0
    while IFS=, read -r app _; do
        case $app in '#'*|app|'') continue ;; esac
        n=$((n + 1))
        grep -Eq "^ok [0-9]+ - $1${app//./\\.}$2" <<<"$output" || { echo "row $app did not pass" >&2; return 1; }
    done < "$COSCHED_SRCDIR/tests/fixtures/table2.csv"
    assert_equal "$n" 19 "number of fixture rows"
}

# lua_tap_all_ok SCRIPT: run a Lua TAP test script (tests/lua/*.lua, with the
# source tree as its argument) and require its plan line and every test line
# "ok N - ..." in order; skips when the interpreter is missing.
lua_tap_all_ok() {
    local lua=${LUA:-lua5.4} line n=0 plan
    command -v "$lua" >/dev/null || skip "the $lua interpreter is missing (Debian package lua5.4)"
    run "$lua" "$COSCHED_SRCDIR/$1" "$COSCHED_SRCDIR"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ ${lines[0]} =~ ^1\.\.[0-9]+$ ]]
    plan=${lines[0]#1..}
    [ "$plan" -gt 0 ]
    for line in "${lines[@]:1}"; do
        [[ $line == \#* ]] && continue          # TAP diagnostics
        n=$((n + 1))
        [[ $line =~ ^ok\ $n\ -\  ]] || { echo "line $n is not ok: $line" >&2; return 1; }
    done
    assert_equal "$n" "$plan" "test lines"
}
