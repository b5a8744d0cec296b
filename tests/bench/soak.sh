#!/bin/bash
# soak.sh - a soak test of the node engine (issue 12 point 5; BENCHMARKS.md
# section 10): `cosched serve` with Slurm steps registering and leaving
# continuously, for real, without Slurm.  Run from the build tree, as root:
#
#   bash tests/bench/soak.sh [--duration S] [--rate R] [--live N] [OPTIONS]
#
#   --duration S   seconds of arrivals (default 600)
#   --rate R       step arrivals per second (default 4.5)
#   --live N       at most N steps live at once (default 16)
#   --life A-B     a step's planned life, seconds (default 0.5-3)
#   --sample S     seconds between samples (default 5)
#   --users N      unprivileged users cosoak1..N (default 3; created with
#                  useradd -r when missing, removed at the end if created)
#   --policy P     gang (default) or flca: the engine's policy
#   --quantum D    the engine's quantum (default 100ms)
#   --inject S     second at which the one policy error is injected
#                  (default: half the duration; -1: none)
#   --seed N       random seed (default 1)
#   --out DIR      results: samples.csv, steps.csv, events.log, engine.log,
#                  summary.txt (default: a new /tmp/cosched-soak.XXXXXX, kept)
#   --wrap CMD     run the engine under CMD (words split on spaces), e.g.
#                  "valgrind --leak-check=full": the engine is then stopped
#                  with SIGTERM (its leak report goes to engine.log), not
#                  SIGKILLed, and the guardian check is skipped
#
# What it does: steps live in a fake tree in Slurm's cgroup/v2 layout inside
# the real cgroup2 mount (as tests/helpers/fakeslurm.bash builds it:
# .../job_J/step_S/{slurm,user/task_T}), with a stand-in slurmstepd (sleep)
# in slurm/ and real tasks (tests/progs/spin with 1 or 2 threads,
# tests/progs/ompwork, sleep) running as the users in user/task_T, born
# inside their cgroup, at nice 10 (they only burn time).  Registrations and
# deregistrations are the protocol's lines (launcher/shared/proto.h) sent as root
# over the engine's socket, as the SPANK plugin sends them.  A driver
# (python, below) starts steps at --rate (jobs of two steps; one task or two
# per step, the second joining the first), lets them run their life and ends
# them one of four ways: the tasks exit by themselves and are deregistered
# (as task_exit does), deregistered while running then sent SIGTERM,
# SIGKILLed and never deregistered (the engine must see it through its
# pidfds), SIGKILLed then deregistered (scancel).  The engine runs a policy "soak": the chosen
# policy, except that its plan() raises an error once, the first time it
# sees the step of job 999000001, started at --inject.
#
# Every --sample seconds: VmRSS and open fds of the engine and of its
# guardian (from /proc), the steps the engine reports (status request as
# root) and one user's view (`cosched status --json` as that user: only
# their steps), in samples.csv.  A step that has ended must be gone from the
# engine's status within 10 s, then its user/ cgroup must read frozen 0 in
# cgroup.events (the kernel's word); then its cgroups are removed.
#
# PASS/FAIL lines at the end, exit 1 on any FAIL:
#   steps       at least 2,000 steps when --duration >= 600 (else rate-scaled)
#   registered  every registration acknowledged (OK id=N; a second task gets
#               its step's id); refusals only for tasks that had already died
#   deregistered every deregistration acknowledged (OK, or OK unknown=1 when
#               the pidfd was first)
#   lost        0 ended steps still listed by the engine after 10 s
#   frozen      0 step cgroups frozen after the engine let them go, and none
#               frozen at the end anywhere in the tree
#   stuck       0 steps whose tasks outlived their planned life by 30 s, or
#               ignored SIGTERM for 10 s once deregistered (frozen)
#   visibility  a user's status never shows another user's step
#   policy      the injected error was logged once and the engine went on
#   log         no warning or error in the engine's log but the injected one
#               and freezes slower than the engine's 100 ms bound (counted
#               in an INFO line: on a loaded machine a task at nice 10 may
#               not reach the freezer in time; the engine then lets the
#               step run that quantum, its documented degraded mode)
#   rss         engine and guardian: VmRSS growth from 20 % of the run to its
#               end (idle again) below 256 KiB: over the last 80 % of a
#               10-minute run (about 1,900 steps) a leak of 140 bytes a step
#               (one forgotten 128-byte allocation) would exceed it; the
#               engine's least-squares trend per 1,000 steps is printed too
#   fds         engine and guardian: open fds at the end equal to the start
#   empty       the engine reports 0 steps at the end
#   guardian    SIGKILLed at the end, the idle engine's guardian has nothing
#               to restore (no record of a step left behind) and exits
#   cleanup     no cgroup, no process of the soak left (tree removed, users
#               own no process)
# Everything (engine, tasks, cgroups, users it created) is removed on exit,
# Ctrl-C or failure.
set -euo pipefail
# shellcheck source=../helpers/standalone.bash
. "$(dirname "$0")/../helpers/standalone.bash"

DURATION=600 RATE=4.5 LIVE=16 LIFE=0.5-3 SAMPLE=5 NUSERS=3 POLICY=gang QUANTUM=100ms INJECT='' SEED=1 OUT='' WRAP=''
usage() { sed -n '/^#   bash/,/^# What it does/{/^# What it does/d;p}' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case $1 in -h|--help) usage 0 ;; esac
    [ $# -ge 2 ] || { echo "soak: $1 needs a value" >&2; exit 2; }
    case $1 in
    --duration) DURATION=$2 ;;
    --rate) RATE=$2 ;;
    --live) LIVE=$2 ;;
    --life) LIFE=$2 ;;
    --sample) SAMPLE=$2 ;;
    --users) NUSERS=$2 ;;
    --policy) POLICY=$2 ;;
    --quantum) QUANTUM=$2 ;;
    --inject) INJECT=$2 ;;
    --seed) SEED=$2 ;;
    --out) OUT=$2 ;;
    --wrap) WRAP=$2 ;;
    *) echo "soak: unknown option '$1'" >&2; usage ;;
    esac
    shift 2
done
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 10 ] || { echo "soak: --duration: whole seconds, at least 10" >&2; exit 2; }
[[ $NUSERS =~ ^[1-9]$ ]] || { echo "soak: --users: 1 to 9" >&2; exit 2; }
case $POLICY in gang|flca) ;; *) echo "soak: --policy: gang or flca" >&2; exit 2 ;; esac
[[ $LIFE =~ ^[0-9.]+-[0-9.]+$ ]] || { echo "soak: --life: A-B seconds" >&2; exit 2; }
[ -n "$INJECT" ] || INJECT=$((DURATION / 2))

[ "$(id -u)" = 0 ] || { echo "soak: run as root (the engine and the cgroups need it)" >&2; exit 2; }
COSCHED=$COSCHED_BUILDDIR/cosched
SPIN=$COSCHED_BUILDDIR/tests/progs/spin
OMPWORK=$COSCHED_BUILDDIR/tests/progs/ompwork
for b in "$COSCHED" "$SPIN" "$OMPWORK"; do
    [ -x "$b" ] || { echo "soak: $b missing: run make and make tests/progs/spin tests/progs/ompwork" >&2; exit 2; }
done
V2=$(_cs_v2_mount)
[ -n "$V2" ] && [ -w "$V2" ] || { echo "soak: needs a writable cgroup2 mount" >&2; exit 2; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/cosched-soak.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/cosched-soak-run.XXXXXX)   # socket, policy, binaries: removed at the end
chmod 755 "$WORK"
SOCK=$WORK/e.sock
# FAKE_ROOT named like fakeslurm.bash's: other runs' test helpers see the
# live pid of this shell and leave the tree alone
FAKE_TOP=$V2/cosched-fakeslurm
FAKE_ROOT=$FAKE_TOP/$$
FAKE_SCOPE=$FAKE_ROOT/system.slice/slurmstepd.scope
ENGINE='' DRIVER='' CREATED_USERS=() FINAL_OK=''

# ------------------------------------------------------------------ cleanup

tree_procs() {   # every pid in a cgroup of the fake tree
    [ -d "$FAKE_ROOT" ] || return 0
    find "$FAKE_ROOT" -name cgroup.procs -exec cat {} + 2>/dev/null || true
}

user_procs() {   # pids owned by the soak's users
    local u
    for u in "${USERS[@]}"; do pgrep -u "$u" 2>/dev/null || true; done
}

# shellcheck disable=SC2317   # reached through the traps
cleanup() {
    local rc=$? p d u n
    trap - EXIT INT TERM
    set +e
    if [ -n "$DRIVER" ] && kill -0 "$DRIVER" 2>/dev/null; then
        kill -TERM "$DRIVER" 2>/dev/null
        wait_for 10 "! kill -0 $DRIVER 2>/dev/null" || kill -KILL "$DRIVER" 2>/dev/null
        wait "$DRIVER" 2>/dev/null
    fi
    # what the driver did not end: SIGKILL (a task frozen by cgroup.freeze dies on it)
    n=0
    for p in $(tree_procs) $(user_procs); do kill -KILL "$p" 2>/dev/null && n=$((n + 1)); done
    [ "$n" = 0 ] || echo "soak: cleanup: killed $n left-over processes" >&2
    if [ -n "$ENGINE" ] && kill -0 "$ENGINE" 2>/dev/null; then
        kill -TERM "$ENGINE"
        wait_for 10 "! kill -0 $ENGINE 2>/dev/null" || { echo "soak: cleanup: SIGKILL to the engine" >&2; kill -KILL "$ENGINE"; }
        wait "$ENGINE" 2>/dev/null
    fi
    if [ -d "$FAKE_ROOT" ]; then
        while read -r d; do
            [ "$(cat "$d/cgroup.freeze" 2>/dev/null)" = 1 ] && echo 0 > "$d/cgroup.freeze" 2>/dev/null
        done < <(find "$FAKE_ROOT" -type d)
        wait_for 5 "grep -qx 'populated 0' '$FAKE_ROOT/cgroup.events'"
        find "$FAKE_ROOT" -depth -type d -exec rmdir {} \; 2>/dev/null
        rmdir "$FAKE_TOP" 2>/dev/null
        [ ! -d "$FAKE_ROOT" ] || { echo "soak: cleanup: could not remove $FAKE_ROOT" >&2; rc=1; }
    fi
    for u in "${CREATED_USERS[@]}"; do
        pkill -KILL -u "$u" 2>/dev/null
        wait_for 5 "! pgrep -u $u >/dev/null" || true
        userdel "$u" 2>/dev/null || echo "soak: cleanup: userdel $u failed" >&2
    done
    rm -rf "$WORK"
    [ -n "$FINAL_OK" ] || echo "soak: results (incomplete run) in $OUT" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "soak: interrupted" >&2; exit 130' INT
trap 'echo "soak: terminated" >&2; exit 143' TERM

# ------------------------------------------------------------------ users

USERS=() USPEC=()
for i in $(seq "$NUSERS"); do
    u=cosoak$i
    if ! id -u "$u" >/dev/null 2>&1; then
        useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$u"
        CREATED_USERS+=("$u")
    fi
    USERS+=("$u")
    USPEC+=("$u:$(id -u "$u"):$(id -g "$u")")
done

# ------------------------------------------------------------------ the policy

# "soak": the chosen policy, whose plan() raises once when it first sees the
# trigger step (job 999000001); the policy's own file is required unchanged.
# Policies load only from root-owned directories others cannot write.
TRIGGER_JOB=999000001
mkdir -m 755 "$WORK/pol"
cat > "$WORK/pol/soak.lua" <<EOF
-- soak.sh: $POLICY, with one policy error injected (tests/bench/soak.sh)
local base = require "policies.$POLICY"
local fired = false
return {
  api = 1,
  name = "soak",
  description = "soak.sh: $POLICY with one injected error",
  params = base.params,
  init = base.init,
  plan = function(snap)
    if not fired then
      for _, j in ipairs(snap.jobs) do
        if j.name == "$TRIGGER_JOB.0" then
          fired = true
          error("soak: injected policy error (trigger step $TRIGGER_JOB.0, epoch " .. snap.epoch .. ")")
        end
      end
    end
    return base.plan(snap)
  end,
}
EOF
chmod 644 "$WORK/pol/soak.lua"

# ------------------------------------------------------------------ the engine

mkdir -p "$FAKE_SCOPE"
# shellcheck disable=SC2086   # --wrap: a command and its words
$WRAP "$COSCHED" serve --socket "$SOCK" --policy soak --policy-path "$WORK/pol" --quantum "$QUANTUM" \
    --counters none 2> "$OUT/engine.log" 3>&- &
ENGINE=$!
wait_for 60 "$PY '$COSCHED_SRCDIR/tests/helpers/cs_client.py' '$SOCK' 'COSCHED/1 ping' 2>/dev/null | grep -q '^OK '" || {
    echo "soak: the engine did not answer" >&2
    cat "$OUT/engine.log" >&2
    exit 1
}
# its guardian: the cosched-guard holding a pidfd of the engine
GUARD=
for _ in $(seq 50); do
    for p in $(pgrep -x cosched-guard || true); do
        grep -qs "^Pid:[[:space:]]*$ENGINE\$" /proc/"$p"/fdinfo/* && GUARD=$p
    done
    [ -n "$GUARD" ] && break
    sleep 0.1
done
if [ -z "$GUARD" ] && [ -n "$WRAP" ]; then
    GUARD=0        # a wrapper such as valgrind may hide the guardian's name: not sampled
elif [ -z "$GUARD" ]; then
    echo "soak: no guardian found for engine $ENGINE" >&2
    exit 1
fi

{
    echo "soak: $(date -u '+%F %T') UTC, $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "soak: engine pid $ENGINE (guardian $GUARD), policy soak ($POLICY + 1 injected error), quantum $QUANTUM"
    echo "soak: duration $DURATION s, rate $RATE/s, at most $LIVE live, life $LIFE s, users ${USERS[*]}, seed $SEED"
    echo "soak: results in $OUT"
} | tee "$OUT/summary.txt" >&2

# ------------------------------------------------------------------ the driver

"$PY" - "$SOCK" "$FAKE_SCOPE" "$OUT" "$DURATION" "$RATE" "$LIVE" "$LIFE" "$SAMPLE" "$INJECT" "$SEED" \
    "$ENGINE" "$GUARD" "$TRIGGER_JOB" "$SPIN" "$OMPWORK" "$COSCHED" "${USPEC[*]}" <<'PY' &
import json, os, random, signal, socket, subprocess, sys, time

(sock, scope, out, duration, rate, maxlive, life, every, inject, seed, engine, guard, trigger,
 spin, ompwork, cosched, uspec) = sys.argv[1:]
duration, rate, maxlive, every, inject = float(duration), float(rate), int(maxlive), float(every), float(inject)
life_lo, life_hi = (float(x) for x in life.split("-"))
users = [(n, int(u), int(g)) for n, u, g in (s.split(":") for s in uspec.split())]
rnd = random.Random(int(seed))
LOST_AFTER, STUCK_AFTER = 10.0, 30.0
C = dict(steps=0, tasks=0, reg_sent=0, reg_ok=0, reg_late=0, reg_err=0, reg_noreply=0, reg_idmismatch=0, reg_rejoin=0,
         dereg_sent=0, dereg_ok=0, dereg_unknown=0, dereg_err=0, dereg_noreply=0, killed=0, sigkill_steps=0,
         gone=0, lost=0, late_gone=0, left_frozen=0, rmdir_failed=0, stuck=0, visibility=0, status_fail=0,
         deferred=0, max_live=0, max_engine_steps=0)
kinds = {}
t0 = time.monotonic()
events = open(os.path.join(out, "events.log"), "w", buffering=1)
stepscsv = open(os.path.join(out, "steps.csv"), "w", buffering=1)
stepscsv.write("n,job,step,user,tasks,prog,end,start_s,ended_s,gone_s,result\n")
samples = open(os.path.join(out, "samples.csv"), "w", buffering=1)
samples.write("t_s,engine_rss_kb,engine_fds,guard_rss_kb,guard_fds,engine_steps,driver_live,"
              "steps_started,registrations_ok,deregistrations_ok,killed_tasks,user,user_steps\n")
stop = False


def now():
    return time.monotonic() - t0


def ev(msg):
    events.write("%8.3f %s\n" % (now(), msg))


LAT = {}


def call(req, timeout=10.0):
    """One request, the whole reply (None: no engine or no reply); latency per verb in LAT."""
    verb = req.split()[1]
    t = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock)
        s.sendall(req.encode() + b"\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        return data.decode("utf-8", "replace")
    except OSError as e:
        ev("no reply to '%s': %s" % (req, e))
        return None
    finally:
        s.close()
        dt = time.monotonic() - t
        n, tot, mx = LAT.get(verb, (0, 0.0, 0.0))
        LAT[verb] = (n + 1, tot + dt, max(mx, dt))


def status():
    r = call("COSCHED/1 status format=json")
    if r is None or not r.startswith("OK json\n"):
        C["status_fail"] += 1
        ev("status failed: %r" % (r[:200] if r else r))
        return None
    return json.loads(r[len("OK json\n"):])


def proc_stat(pid):
    rss = fds = -1
    try:
        for line in open("/proc/%s/status" % pid):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        fds = len(os.listdir("/proc/%s/fd" % pid))
    except OSError:
        pass
    return rss, fds


def wr(path, val):
    with open(path, "w") as f:
        f.write(val)


def mover(cg, ids=None):
    """preexec: join cgroup cg (root still), then become the user."""
    def f():
        wr(cg + "/cgroup.procs", "0")
        os.setpgid(0, 0)
        if ids:
            os.nice(10)              # tasks only burn time: spare the machine's other users
            os.setgroups([])
            os.setgid(ids[1])
            os.setuid(ids[0])
    return f


class Step:
    pass


live, retiring = [], []
n_started = 0


def start_step(job, stepno, trig=False):
    global n_started
    st = Step()
    st.n, st.job, st.step = n_started, job, stepno
    n_started += 1
    st.user = users[job % len(users)]
    st.dir = "%s/job_%d/step_%d" % (scope, job, stepno)
    st.ntasks = 2 if rnd.random() < 0.3 else 1
    r = rnd.random()
    st.prog = "spin" if r < 0.6 else "spin2" if r < 0.7 else "ompwork" if r < 0.85 else "sleep"
    r = rnd.random()
    st.kind = "exit" if r < 0.45 else "dereg" if r < 0.6 else "kill" if r < 0.9 else "kill+dereg"
    if trig:
        st.kind = "exit"
    kinds[st.kind] = kinds.get(st.kind, 0) + 1
    st.life = rnd.uniform(life_lo, life_hi)
    st.start = now()
    st.ended = st.gone = None
    st.id = None
    st.result = ""
    os.makedirs(st.dir + "/slurm")
    os.makedirs(st.dir + "/user")
    st.stepd = subprocess.Popen(["sleep", "100000"], preexec_fn=mover(st.dir + "/slurm"),
                                stdin=subprocess.DEVNULL, close_fds=True)
    st.tasks = []
    for t in range(st.ntasks):
        cg = "%s/user/task_%d" % (st.dir, t)
        os.makedirs(cg)
        if st.prog == "spin":
            argv = [spin, "-t", "1", "-w", "%.2f" % st.life]
        elif st.prog == "spin2":
            argv = [spin, "-t", "2", "-w", "%.2f" % st.life]
        elif st.prog == "ompwork":
            argv = [ompwork, "-k", "barrier", "-n", "100000"]   # about 0.05 s alone
        else:
            argv = ["sleep", "%.2f" % st.life]
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "passive",
               "GOMP_SPINCOUNT": "0"}
        p = subprocess.Popen(argv, preexec_fn=mover(cg, st.user[1:]), env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, close_fds=True)
        st.tasks.append(p)
        C["tasks"] += 1
        C["reg_sent"] += 1
        req = ("COSCHED/1 register job=%d step=%d uid=%d pid=%d cores=0-%d task=%d ntasks=%d name=%s"
               % (job, stepno, st.user[1], p.pid, os.cpu_count() - 1, t, st.ntasks, st.prog))
        rep = call(req)
        if rep is None:
            C["reg_noreply"] += 1
        elif rep.startswith("OK id="):
            C["reg_ok"] += 1
            i = int(rep.split()[1][3:])
            if st.id is None:
                st.id = i
            elif i != st.id and all(q.poll() is not None for q in st.tasks[:-1]):
                # the earlier tasks had all ended: the step had left, this task starts it again
                C["reg_rejoin"] += 1
                ev("step %d.%d: task %d got id %d after the step's other tasks ended (id %d)" % (job, stepno, t, i, st.id))
            elif i != st.id:
                C["reg_idmismatch"] += 1
                ev("step %d.%d: task %d got id %d, the step has %d" % (job, stepno, t, i, st.id))
        elif p.poll() is not None:
            C["reg_late"] += 1          # the task died before it registered: not the engine's fault
            ev("step %d.%d task %d (pid %d) ended before registering: %s" % (job, stepno, t, p.pid, rep.strip()))
        else:
            C["reg_err"] += 1
            ev("step %d.%d task %d (pid %d): register refused: %s" % (job, stepno, t, p.pid, rep.strip()))
    C["steps"] += 1
    live.append(st)
    if trig:
        ev("trigger step %d.%d started (policy error injected)" % (job, stepno))


def deregister(st):
    for p in st.tasks:
        C["dereg_sent"] += 1
        rep = call("COSCHED/1 deregister job=%d step=%d pid=%d" % (st.job, st.step, p.pid))
        if rep is None:
            C["dereg_noreply"] += 1
        elif rep.strip() == "OK":
            C["dereg_ok"] += 1
        elif rep.strip() == "OK unknown=1":
            C["dereg_unknown"] += 1
        else:
            C["dereg_err"] += 1
            ev("step %d.%d pid %d: deregister: %s" % (st.job, st.step, p.pid, rep.strip()))


def frozen_of(st):
    try:
        e = open(st.dir + "/user/cgroup.events").read().split()
        return e[e.index("frozen") + 1]
    except (OSError, ValueError):
        return "?"


def retire(st):
    for p in st.tasks:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            # SIGTERM not acted on in 10 s: frozen?  SIGKILL kills a task frozen by cgroup.freeze
            C["stuck"] += 1
            st.result += " stuck"
            ev("step %d.%d: task %d ignored SIGTERM for 10 s after its deregistration; frozen=%s"
               % (st.job, st.step, p.pid, frozen_of(st)))
            p.kill()
            p.wait()
    st.ended = now()
    live.remove(st)
    retiring.append(st)


def advance(st, final=False):
    """Move a live step along: end it when its time has come."""
    t = now()
    if st.kind == "exit":
        if all(p.poll() is not None for p in st.tasks):
            deregister(st)           # task_exit: after the tasks were reaped
            retire(st)
        elif t - st.start > st.life + STUCK_AFTER:
            C["stuck"] += 1
            st.result = "stuck"
            ev("step %d.%d: tasks still alive %.1f s after their planned life %.1f s; frozen=%s"
               % (st.job, st.step, t - st.start, st.life, frozen_of(st)))
            for p in st.tasks:
                p.kill()
            retire(st)
        return
    if t - st.start < st.life and not final:
        return
    if st.kind == "dereg":
        deregister(st)               # the step leaves the engine while its tasks run...
        for p in st.tasks:
            p.terminate()            # ... then ends (SIGTERM to a thawed, uncontrolled task)
    else:
        C["sigkill_steps"] += 1
        for p in st.tasks:
            if p.poll() is None:
                p.kill()
                C["killed"] += 1
        if st.kind == "kill+dereg":
            for p in st.tasks:
                p.wait()
            deregister(st)
    retire(st)


def rm(path):
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError as e:
        ev("rmdir %s: %s" % (path, e))
        return False


def bury(st, listed):
    """A retiring step: gone from the engine? then check and remove it."""
    t = now()
    if (st.job, st.step) in listed:
        if t - st.ended > LOST_AFTER and not st.result.startswith("lost"):
            C["lost"] += 1
            st.result = "lost"
            ev("step %d.%d (%s, %s) still listed %.1f s after it ended: %s"
               % (st.job, st.step, st.kind, st.prog, t - st.ended, json.dumps(listed[(st.job, st.step)])))
        return False
    st.gone = t
    if st.result == "lost":
        C["late_gone"] += 1
        st.result = "lost, gone after %.1f s" % (t - st.ended)
    C["gone"] += 1
    ev_ = open(st.dir + "/user/cgroup.events").read().split()
    frz = ev_[ev_.index("frozen") + 1]
    if frz != "0" or open(st.dir + "/user/cgroup.freeze").read().strip() != "0":
        C["left_frozen"] += 1
        st.result += " frozen"
        ev("step %d.%d left frozen by the engine: cgroup.events %s" % (st.job, st.step, ev_))
        wr(st.dir + "/user/cgroup.freeze", "0")
    st.stepd.kill()
    st.stepd.wait()
    ok = all(rm("%s/user/task_%d" % (st.dir, k)) for k in range(st.ntasks))
    ok = rm(st.dir + "/user") and rm(st.dir + "/slurm") and rm(st.dir) and ok
    if not ok:
        C["rmdir_failed"] += 1
        st.result += " rmdir-failed"
    if st.step == 1 or not os.path.isdir("%s/job_%d/step_1" % (scope, st.job)):
        try:
            os.rmdir("%s/job_%d" % (scope, st.job))
        except OSError:
            pass                     # its other step still lives
    stepscsv.write("%d,%d,%d,%s,%d,%s,%s,%.3f,%.3f,%.3f,%s\n" % (
        st.n, st.job, st.step, st.user[0], st.ntasks, st.prog, st.kind, st.start, st.ended, st.gone,
        st.result.strip() or "ok"))
    return True


last_status = {}


def poll_engine():
    global last_status
    d = status()
    if d is None:
        return
    last_status = {(s["job"], s["step"]): {k: s[k] for k in ("state", "reason", "tasks", "user")}
                   for s in d["steps"]}
    C["max_engine_steps"] = max(C["max_engine_steps"], len(last_status))
    for st in list(retiring):
        if bury(st, last_status):
            retiring.remove(st)


def user_view(k):
    name, uid, gid = users[k % len(users)]
    try:
        r = subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups", cosched,
                            "status", "--json", "--socket", sock], capture_output=True, timeout=10)
        d = json.loads(r.stdout)
    except (subprocess.TimeoutExpired, ValueError) as e:
        C["status_fail"] += 1
        ev("status as %s failed: %s" % (name, e))
        return name, -1
    other = [s for s in d["steps"] if s["uid"] != uid]
    if other:
        C["visibility"] += 1
        ev("status as %s shows other users' steps: %s" % (name, other))
    return name, len(d["steps"])


def sample(k):
    er, ef = proc_stat(engine)
    gr, gf = proc_stat(guard)
    d = status()
    n = len(d["steps"]) if d else -1
    u, un = user_view(k)
    samples.write("%.1f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d\n" % (
        now(), er, ef, gr, gf, n, len(live), C["steps"], C["reg_ok"], C["dereg_ok"] + C["dereg_unknown"],
        C["killed"], u, un))


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
rc = 0
try:
    sample(0)
    nsample, next_sample, next_arrival, next_poll = 1, every, 0.0, 1.0
    seq, injected = 0, inject < 0
    while not stop and now() < duration:
        t = now()
        if t >= next_arrival:
            next_arrival += 1.0 / rate
            if not injected and t >= inject:
                injected = True
                start_step(int(trigger), 0, trig=True)
            elif len(live) >= maxlive:
                C["deferred"] += 1
            else:
                # jobs of two steps: step 0, then step 1 of the same job
                start_step(1000 + seq // 2, seq % 2)
                seq += 1
        C["max_live"] = max(C["max_live"], len(live))
        for st in list(live):
            advance(st)
        if t >= next_poll:
            next_poll = t + 0.5
            poll_engine()
        if t >= next_sample:
            next_sample += every
            sample(nsample)
            nsample += 1
        time.sleep(0.01)
    C["arrival_lag_s"] = round(max(0.0, now() - next_arrival), 1)   # arrivals behind schedule at the end
    if stop:                         # interrupted: no verdict, the shell cleans up
        raise KeyboardInterrupt
    # the end: no more arrivals; every live step ends its way, all are buried
    ev("arrivals over: %d live, %d retiring" % (len(live), len(retiring)))
    deadline = now() + STUCK_AFTER + 5
    while (live or retiring) and now() < deadline:
        for st in list(live):
            advance(st, final=True)
        poll_engine()
        time.sleep(0.2)
        if retiring and all(now() - st.ended > LOST_AFTER + 1 for st in retiring):
            poll_engine()
            break
    for st in list(live):
        st.result = "not ended"
        for p in st.tasks:
            p.kill()
        retire(st)
    poll_engine()
    time.sleep(1)
    sample(nsample)
    d = status()
    C["engine_steps_end"] = len(d["steps"]) if d else -1
    C["unburied"] = len(retiring)
    for st in retiring:
        ev("step %d.%d (%s) never left the engine: %s" % (st.job, st.step, st.kind, last_status.get((st.job, st.step))))
        for p in st.tasks:
            p.kill()
        st.stepd.kill()
        st.stepd.wait()
except KeyboardInterrupt:
    stop = True
    for st in live + retiring:
        for p in st.tasks + [st.stepd]:
            p.kill()
            p.wait()
except Exception as e:
    import traceback
    ev("driver failed: %s" % traceback.format_exc())
    rc = 1
    for st in live + retiring:
        for p in st.tasks + [st.stepd]:
            try:
                p.kill()
                p.wait()
            except Exception:
                pass
C["elapsed_s"] = round(now(), 1)
C["interrupted"] = int(stop)
with open(os.path.join(out, "counts.txt"), "w") as f:
    for k, v in C.items():
        f.write("%s=%s\n" % (k, v))
    for k, (n, tot, mx) in sorted(LAT.items()):
        f.write("lat_%s_ms=%.2f/%.1f\n" % (k, 1000 * tot / n, 1000 * mx))
    for k, v in sorted(kinds.items()):
        f.write("kind_%s=%d\n" % (k.replace("+", "_"), v))
sys.exit(rc or (130 if stop else 0))
PY
DRIVER=$!
drc=0
wait "$DRIVER" || drc=$?
DRIVER=
[ "$drc" != 130 ] || { echo "soak: interrupted" >&2; exit 130; }
[ "$drc" = 0 ] || { echo "soak: the driver failed (status $drc); see $OUT/events.log" >&2; tail -5 "$OUT/events.log" >&2; exit 1; }

# ------------------------------------------------------------------ verdict

declare -A N
while IFS='=' read -r k v; do N[$k]=$v; done < "$OUT/counts.txt"
FAILS=0
verdict() {   # NAME OK? TEXT
    local r=PASS
    [ "$2" = 1 ] || { r=FAIL; FAILS=$((FAILS + 1)); }
    printf '%s %-12s %s\n' "$r" "$1" "$3" | tee -a "$OUT/summary.txt"
}
t() { if eval "$1"; then echo 1; else echo 0; fi; }

want_steps=$(awk -v d="$DURATION" 'BEGIN { printf "%d", (d >= 600 ? 2000 : 2000 * d / 600) }')
verdict steps "$(t "[ ${N[steps]} -ge $want_steps ]")" \
    "${N[steps]} steps (${N[tasks]} tasks; at least $want_steps), users ${USERS[*]}, ends: exit ${N[kind_exit]:-0}, deregistered running ${N[kind_dereg]:-0}, SIGKILL ${N[kind_kill]:-0}, SIGKILL+deregister ${N[kind_kill_dereg]:-0}; ${N[killed]} tasks SIGKILLed; at most ${N[max_live]} live (engine: ${N[max_engine_steps]}); ${N[deferred]} arrivals deferred (--live)"
verdict registered "$(t "[ ${N[reg_ok]} -eq $((N[reg_sent] - N[reg_late])) ] && [ ${N[reg_idmismatch]} = 0 ]")" \
    "${N[reg_sent]} sent, ${N[reg_ok]} OK, ${N[reg_late]} refused because the task had already died, ${N[reg_err]} refused otherwise, ${N[reg_noreply]} unanswered, ${N[reg_idmismatch]} second tasks given another id than their live step's (${N[reg_rejoin]} after the step's first task had ended: a new step, rightly)"
verdict deregistered "$(t "[ $((N[dereg_ok] + N[dereg_unknown])) -eq ${N[dereg_sent]} ]")" \
    "${N[dereg_sent]} sent, ${N[dereg_ok]} OK, ${N[dereg_unknown]} OK unknown=1 (pidfd first), ${N[dereg_err]} refused, ${N[dereg_noreply]} unanswered"
verdict lost "$(t "[ ${N[lost]} = 0 ] && [ ${N[unburied]} = 0 ]")" \
    "${N[gone]} steps left the engine; ${N[lost]} still listed 10 s after they ended (${N[late_gone]} of them later left), ${N[unburied]} never left"
frozen_now=$({ find "$FAKE_ROOT" -name cgroup.events -exec grep -l '^frozen 1' {} + 2>/dev/null || true; } | wc -l)
verdict frozen "$(t "[ ${N[left_frozen]} = 0 ] && [ $frozen_now = 0 ]")" \
    "${N[left_frozen]} step cgroups frozen after the engine let them go, $frozen_now frozen cgroups in the tree now"
verdict stuck "$(t "[ ${N[stuck]} = 0 ]")" "${N[stuck]} steps whose tasks outlived their life by 30 s"
verdict visibility "$(t "[ ${N[visibility]} = 0 ] && [ ${N[status_fail]} = 0 ]")" \
    "${N[visibility]} user views showing another user's step, ${N[status_fail]} failed status requests"
pol_lines=$(grep -c 'policy soak failed in epoch' "$OUT/engine.log" || true)
pol_msg=$(grep -m1 -o 'soak: injected policy error[^"]*)' "$OUT/engine.log" || true)
if [ "$INJECT" -lt 0 ]; then
    verdict policy 1 "no error injected (--inject -1)"
else
    ok=0
    [ "$pol_lines" = 1 ] && [ -n "$pol_msg" ] && ok=1
    verdict policy "$ok" \
        "$pol_lines 'policy soak failed in epoch' lines in the engine's log ('$pol_msg'); scheduling went on (steps after it: see steps.csv)"
fi
# the engine's other complaints: none expected but freezes that took longer
# than the engine's bound (slurm.c FREEZE_TIMEOUT, 100 ms; a task that gets
# no cpu on a loaded machine does not reach the freezer): the engine thaws
# such a step and lets it run that quantum - its documented degraded mode
slow='not frozen after [0-9]* ms (.*); thawed, left running this step'
nslow=$(grep -c "^cosched: warning: slurm: step .*: $slow" "$OUT/engine.log" || true)
others=$(grep -E '^cosched: (error|warning):' "$OUT/engine.log" |
    grep -v 'soak: injected policy error\|policy soak failed in epoch' | grep -cv "$slow" || true)
verdict log "$(t "[ $others = 0 ]")" \
    "$others warnings or errors in the engine's log besides the injected one and slow freezes ($(grep -c . "$OUT/engine.log") lines in all)"
printf 'INFO %-12s %s\n' freezes "$nslow freezes not complete within the engine's bound (thawed, left running that quantum: load $(cut -d' ' -f1-3 /proc/loadavg) now)" |
    tee -a "$OUT/summary.txt"
# RSS and fds from the samples: growth from the first sample at >= 20 % of the run to the last
read -r e_rss0 e_rss20 e_rss1 e_rssmax g_rss0 g_rss20 g_rss1 g_rssmax e_fd0 e_fd1 e_fdmax g_fd0 g_fd1 g_fdmax nsamp slope < <(
    awk -F, -v d="$DURATION" 'NR == 2 { er0 = $2; gr0 = $4; ef0 = $3; gf0 = $5 }
        NR > 1 { if (!got && $1 >= 0.2 * d) { er20 = $2; gr20 = $4; got = 1 }
                 er1 = $2; gr1 = $4; ef1 = $3; gf1 = $5; n++
                 if ($2 > erm) erm = $2; if ($4 > grm) grm = $4; if ($3 > efm) efm = $3; if ($5 > gfm) gfm = $5
                 if (got) { k++; sx += $8; sy += $2; sxx += $8 * $8; sxy += $8 * $2 } }
        END { q = k * sxx - sx * sx; slope = q > 0 ? 1000 * (k * sxy - sx * sy) / q : 0
              print er0, er20, er1, erm, gr0, gr20, gr1, grm, ef0, ef1, efm, gf0, gf1, gfm, n, slope }' "$OUT/samples.csv")
verdict rss "$(t "[ $((e_rss1 - e_rss20)) -lt 256 ] && [ $((g_rss1 - g_rss20)) -lt 256 ]")" \
    "engine VmRSS $e_rss0 kB at start, $e_rss20 kB at 20 %, $e_rss1 kB at the end (max $e_rssmax); guardian $g_rss0 / $g_rss20 / $g_rss1 kB (max $g_rssmax); $nsamp samples; engine's least-squares trend after 20 %: $(printf '%.1f' "$slope") kB per 1000 steps; bound: growth < 256 KiB after 20 %"
verdict fds "$(t "[ $e_fd0 = $e_fd1 ] && [ $g_fd0 = $g_fd1 ]")" \
    "engine fds $e_fd0 at start, $e_fd1 at the end (max $e_fdmax); guardian $g_fd0 / $g_fd1 (max $g_fdmax)"
verdict empty "$(t "[ ${N[engine_steps_end]} = 0 ]")" "the engine reports ${N[engine_steps_end]} steps at the end"
# the idle engine is SIGKILLed: its guardian then restores whatever it still
# holds records of and says so ("restoring N item(s)"): after every step has
# left it must hold none (a record per step not forgotten would show here)
if [ -n "$WRAP" ]; then
    kill -TERM "$ENGINE"
    wait "$ENGINE" || true
    ENGINE=
    echo "soak: under --wrap the engine was stopped with SIGTERM; guardian not checked" | tee -a "$OUT/summary.txt"
else
    { kill -KILL "$ENGINE" && wait "$ENGINE"; } 2>/dev/null || true
    ENGINE=
    wait_for 5 "! kill -0 $GUARD 2>/dev/null" && gstat=gone || gstat="still alive"
    held=$(sed -n 's/.*guardian: cosched (pid [0-9]*) ended without restoring its jobs; restoring \([0-9]*\) item.*/\1/p' "$OUT/engine.log")
    verdict guardian "$(t "[ -z '$held' ] && [ '$gstat' = gone ]")" \
        "after the idle engine's SIGKILL its guardian restored ${held:-0} items and is $gstat"
fi
left_cg=$(find "$FAKE_SCOPE" -mindepth 1 -type d 2>/dev/null | wc -l)
left_p=$( (tree_procs; user_procs) | sort -u | wc -l)
verdict cleanup "$(t "[ $left_cg = 0 ] && [ $left_p = 0 ]")" \
    "$left_cg step/job cgroups and $left_p processes of the soak left (tree and users' processes)"
{
    echo "soak: ${N[elapsed_s]} s, policy error lines in the engine's log:"
    grep -E 'plan\(\) failed|policy soak failed' "$OUT/engine.log" | sed 's/^/    /' | head -4
} | tee -a "$OUT/summary.txt" >&2
FINAL_OK=1
if [ "$FAILS" = 0 ]; then
    echo "soak: PASS (results in $OUT)" | tee -a "$OUT/summary.txt"
    exit 0
fi
echo "soak: FAIL: $FAILS checks failed (results in $OUT)" | tee -a "$OUT/summary.txt"
exit 1
