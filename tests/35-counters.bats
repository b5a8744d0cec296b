#!/usr/bin/env bats
# 35-counters: the counter backends behind --counters (launcher/counters/*.c,
# cosched-counters(5)) on real processes.
#
# Without a PMU (VMs, CI) the perf backend is exercised end to end with the
# software events of profiles/test-software.txt: its "instructions" metric is
# task-clock in ns, so per job and step it must equal the CPU time the engine
# measured through the control backend (cpu_s in the trace), and a frozen job
# must count ~0 - which is what shows that counts go to the right job.  The
# tests that need a hardware PMU (perf or likwid with this CPU's profile) skip
# with the reason where there is none and run where there is.

load helpers/common

setup() {
    requires cosched python3
    cd "$BATS_TEST_TMPDIR"
    shipped_data_only
    NCPU=$(nproc)
    steal_jiffies >steal0
    HDR='{"format":"cosched-counters","version":1,"profile":"test-software","slots":["SW0","SW1","SW2","SW3","SW4","SW5","SW6"]}'
}

teardown() {
    cleanup_cosched
}

# steal_jiffies: the time this VM's CPUs waited for the host (/proc/stat's
# "steal", in USER_HZ ticks, all CPUs).  The kernel leaves it out of a task's
# CPU time (cpu_s: sum_exec_runtime, with paravirt time accounting) but
# task-clock counts it (wall time while scheduled in): on a host that steals,
# task-clock exceeds cpu_s by what was stolen from the job.
steal_jiffies() {
    awk '$1 == "cpu" { print $9 + 0; exit }' /proc/stat
}

# Skip unless perf software events can be opened here (seccomp, paranoid 3).
requires_perf_sw() {
    local out
    out=$("$COSCHED" run --counters perf --profile test-software --policy linux --quantum 50ms -- true 2>&1) ||
        skip "perf software events are not usable here: $(echo "$out" | grep -m1 'error:')"
}

# The shipped profile matching this CPU (empty if none).
this_cpu_profile() {
    "$COSCHED" profiles 2>/dev/null | awk '$1 == "match:" { print $2 }'
}

# counters_check TRACE WHAT [ARGS]: assertions over the per-job counts in the
# step lines of a trace; prints what it compared, fails with the step.
#   steps                     print the number of steps
#   nometrics                 no job entry has "metrics" or "counts_flags"
#   cpu TOL MIN [frozen] [total]
#                             test-software: in every step where a job used
#                             >= MIN s of CPU (whatever its state), its
#                             task-clock (metric "instructions", ns) is within
#                             TOL (relative) of cpu_s, or 0.08 s (the two are
#                             read one after the other; slowplan's plan(), which
#                             the counts must not cover, takes 0.26 s), and
#                             above it by at most that plus the CPU time the
#                             host stole since the test began (steal_jiffies:
#                             task-clock counts it, cpu_s does not; 0.319
#                             against 0.291 s and 0.317 against 0.276 s were
#                             seen in a 0.3 s step on a busy host); where it was frozen,
#                             <= 0.03 s; every job has such a step (and, with
#                             "frozen", a frozen one).  With "total", each
#                             job's sums over those steps are compared instead:
#                             an instance that ends is read a last time when
#                             it is reaped (perf.c, instance_ended), maybe in
#                             the next step (seen once: 0.127 vs 0.113 s)
#   hw                        a hardware profile: where a job ran (cpu_s >= 0.05)
#                             instructions, cycles and ipc are > 0; frozen: at
#                             most 2 % of the instructions of its running steps
#   same OTHER                every job's k-th measured step has the same
#                             metrics in TRACE and in OTHER (at least 2 per job)
counters_check() {
    PYTHONPATH="$COSCHED_SRCDIR/tests/helpers" python3 - "$@" <<'EOF'
import json, math, os, sys
from trace_check import read_steps

def steps(path):
    return read_steps(path, "counters_check")

def fail(msg):
    print("counters_check: " + msg, file=sys.stderr)
    sys.exit(1)

path, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
S = steps(path)
if what == "steps":
    print(len(S)); sys.exit(0)
if not S:
    fail("no steps in " + path)
if what == "nometrics":
    for s in S:
        for j in s["jobs"]:
            if "metrics" in j or "counts_flags" in j:
                fail("step %d: job %s has counts: %s" % (s["seq"], j["name"], j))
    print("%d steps, no counts" % len(S)); sys.exit(0)
if what == "cpu":
    tol, mincpu, need_frozen, total = float(args[0]), float(args[1]), "frozen" in args[2:], "total" in args[2:]
    with open("/proc/stat") as f:
        stolen = int(f.readline().split()[8])
    with open("steal0") as f:
        stolen = (stolen - int(f.read())) / os.sysconf("SC_CLK_TCK")
    def apart(tc, cpu, slack):
        # task-clock may exceed cpu_s by what the host stole (steal_jiffies)
        return tc - cpu > slack + stolen or cpu - tc > slack
    ran, froze, names, sums = {}, {}, set(), {}
    for s in S:
        for j in s["jobs"]:
            names.add(j["name"])
            flags, m = j.get("counts_flags"), j.get("metrics") or {}
            if j["state"] != "frozen" and j["cpu_s"] < mincpu:
                continue
            if not flags & 1 or m.get("instructions") is None:
                fail("step %d: job %s (%s) has no counts: %s" % (s["seq"], j["name"], j["state"], j))
            tc = m["instructions"] * 1e-9
            if j["state"] == "frozen":
                if tc > 0.03:
                    fail("step %d: job %s was frozen but counted %.4f s of task-clock" % (s["seq"], j["name"], tc))
                froze[j["name"]] = froze.get(j["name"], 0) + 1
            else:
                if not total and apart(tc, j["cpu_s"], max(tol * j["cpu_s"], 0.08)):
                    fail("step %d: job %s: task-clock %.4f s, engine's cpu_s %.4f s: more than %g%% (and 0.08 s) apart"
                         " (the host stole %.3f s of CPU meanwhile)"
                         % (s["seq"], j["name"], tc, j["cpu_s"], 100 * tol, stolen))
                a, b = sums.get(j["name"], (0, 0))
                sums[j["name"]] = (a + tc, b + j["cpu_s"])
                ran[j["name"]] = ran.get(j["name"], 0) + 1
    for n, (tc, cpu) in sorted(sums.items()):
        if total and apart(tc, cpu, tol * cpu):
            fail("job %s: task-clock %.4f s, engine's cpu_s %.4f s over its steps: more than %g%% apart"
                 " (the host stole %.3f s of CPU meanwhile)" % (n, tc, cpu, 100 * tol, stolen))
    for n in sorted(names):
        if not ran.get(n):
            fail("job %s has no step with cpu_s >= %g to compare (states: %s)"
                 % (n, mincpu, sorted({j["state"] for s in S for j in s["jobs"] if j["name"] == n})))
        if need_frozen and not froze.get(n):
            fail("job %s was never frozen" % n)
    print("compared: running %s, frozen %s; the host stole %.3f s" % (ran, froze, stolen)); sys.exit(0)
if what == "hw":
    runs, frozen = {}, {}
    for s in S:
        for j in s["jobs"]:
            m = j.get("metrics") or {}
            if j["state"] == "run" and j["cpu_s"] >= 0.05:
                for k in ("instructions", "cycles", "ipc"):
                    v = m.get(k)
                    if v is None or not v > 0:
                        fail("step %d: job %s ran %.3f s but %s is %s" % (s["seq"], j["name"], j["cpu_s"], k, v))
                runs.setdefault(j["name"], []).append(m["instructions"])
            elif j["state"] == "frozen" and m.get("instructions") is not None:
                frozen.setdefault(j["name"], []).append(m["instructions"])
    if not runs:
        fail("no running step with cpu_s >= 0.05")
    for n, fs in frozen.items():
        top = max(runs.get(n, [0]))
        for v in fs:
            if top and v > 0.02 * top:
                fail("job %s: frozen step counted %g instructions, its running steps at most %g" % (n, v, top))
    print("running %s, frozen %s" % ({k: len(v) for k, v in runs.items()}, {k: len(v) for k, v in frozen.items()}))
    sys.exit(0)
if what == "same":
    def measured(steps_):
        out = {}
        for s in steps_:
            for j in s["jobs"]:
                out.setdefault(j["name"], []).append((j.get("counts_flags"), j.get("metrics")))
        return out
    a, b = measured(S), measured(steps(args[0]))
    for n in sorted(a):
        k = min(len(a[n]), len(b.get(n, [])))
        common = [i for i in range(k) if a[n][i][0] and b[n][i][0]]
        if len(common) < 2:
            fail("job %s: only %d measured steps in common (%d recorded, %d replayed)" % (n, len(common), len(a[n]), len(b.get(n, []))))
        for i in common:
            if a[n][i] != b[n][i]:
                fail("job %s, its step %d: recorded %s, replayed %s" % (n, i, a[n][i], b[n][i]))
        print("job %s: %d steps identical" % (n, len(common)))
    sys.exit(0)
fail("unknown check " + what)
EOF
}

# ------------------------------------------------------------------ none

@test "--counters none: jobs run, the trace carries no counts" {
    run "$COSCHED" run --counters none --profile test-software --policy gang --quantum 100ms --trace t.jsonl \
        -- "$PROGS/spin" -c 0.15 ::: "$PROGS/spin" -c 0.15
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(counters_check t.jsonl steps)" -ge 2 ]
    counters_check t.jsonl nometrics
    if echo "$output" | grep -q "counters: "; then false; fi
}

# ------------------------------------------------------------------ perf

@test "auto with test-software picks perf" {
    requires_perf_sw
    run "$COSCHED" run --profile test-software --policy linux --quantum 50ms -- true
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "cosched: counters: perf (profile test-software)"
}

@test "perf, gang: a job's task-clock per step is the CPU time it used; a frozen job counts ~0" {
    requires_perf_sw
    run "$COSCHED" run --counters perf --profile test-software --policy gang --quantum 250ms --trace t.jsonl \
        -- "$PROGS/spin" -t "$NCPU" -c 0.8 ::: "$PROGS/spin" -t "$NCPU" -c 0.8
    echo "$output"
    [ "$status" -eq 0 ]
    counters_check t.jsonl cpu 0.10 0.05 frozen
    no_cosched_leftovers
}

# A policy whose plan() takes ~0.1 s of CPU while the job keeps running on the
# other cpu: a step's counts must cover the step as cpu_s does (from the
# step's start, after the plan and the switch), not everything since the
# previous step's end - which here is ~1/3 more.
@test "perf: a step's counts cover the step, not the plan() and switch before it" {
    requires multicore
    requires_perf_sw
    mkdir pol
    cat > pol/slowplan.lua <<'LUA'
return {
  api = 1, name = "slowplan", description = "every job everywhere, after a long plan()", shares_cpus = true,
  plan = function(snap)
    local x = 0
    for i = 1, 12000000 do x = x + i end
    local step = { jobs = {}, shared = true }
    for _, job in ipairs(snap.jobs) do step.jobs[#step.jobs + 1] = { id = job.id, cpus = snap.cpus } end
    return { step }
  end,
}
LUA
    run "$COSCHED" run --counters perf --profile test-software --policy-path pol --policy slowplan --quantum 300ms \
        --trace t.jsonl -- "$PROGS/spin" -c 1.5
    echo "$output"
    [ "$status" -eq 0 ]
    counters_check t.jsonl cpu 0.05 0.05
}

@test "perf, tft with three jobs: counts follow each job through its rotation" {
    requires multicore
    requires_perf_sw
    # 3 jobs, 2 at a time, each needing 3 quanta: every job is frozen at least once
    run "$COSCHED" run --counters perf --profile test-software --policy tft --quantum 200ms --trace t.jsonl \
        -- "$PROGS/spin" -c 0.6 ::: "$PROGS/spin" -c 0.6 ::: "$PROGS/spin" -c 0.6
    echo "$output"
    [ "$status" -eq 0 ]
    counters_check t.jsonl cpu 0.10 0.05 frozen
}

@test "perf: threads and child processes are counted (inherit)" {
    requires multicore
    requires_perf_sw
    # spin -f 1: a child process that spins like its parent; both are the job's
    run "$COSCHED" run --counters perf --profile test-software --policy gang --quantum 250ms --trace t.jsonl \
        -- "$PROGS/spin" -f 1 -c 0.4 ::: "$PROGS/spin" -t 2 -c 0.5
    echo "$output"
    [ "$status" -eq 0 ]
    counters_check t.jsonl cpu 0.10 0.05
}

@test "perf, --window: a restarted job's counts continue across instances" {
    requires_perf_sw
    run "$COSCHED" run --counters perf --profile test-software --policy tft --quantum 200ms --window 1 \
        --trace t.jsonl -- "$PROGS/spin" -c 0.15 ::: "$PROGS/spin" -c 0.15
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '"event":"start"' t.jsonl)" -ge 4 ]
    counters_check t.jsonl cpu 0.10 0.05 total
}

@test "perf with a hardware profile and no PMU: refused, saying what is missing" {
    if has_pmu; then
        run "$COSCHED" run --counters perf --profile skylakeX --policy linux --quantum 50ms -- true
        [ "$status" -ne 0 ] || skip "this machine has a PMU and perf counts events of skylakeX here: nothing to refuse"
        assert_contains "$output" "--counters perf: cannot count any event of profile skylakeX here"
        return
    fi
    run "$COSCHED" run --counters perf --profile skylakeX --trace t.jsonl -- "$PROGS/spin" -c 0.1 -p started.pid
    echo "$output"
    [ "$status" -eq 2 ]
    assert_contains "$output" "error: --counters perf: cannot count any event of profile skylakeX here: perf_event_open of FIXC0 (perf=hw:instructions): No such file or directory"
    assert_contains "$output" "no hardware PMU here"
    [ ! -e started.pid ]
}

@test "auto with a hardware profile and no PMU: one line says why; the run goes on unmeasured" {
    has_pmu && skip "this machine has a hardware PMU (auto may count here)"
    run "$COSCHED" run --profile skylakeX --policy gang --quantum 100ms --trace t.jsonl \
        -- "$PROGS/spin" -c 0.1 ::: "$PROGS/spin" -c 0.1
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c 'counters: none')" -eq 1 ]
    assert_contains "$output" "cosched: counters: none: profile skylakeX cannot be counted here (no hardware PMU); policies get no measurements (-v says why)"
    # one short line on every run of a machine without a PMU; the details with -v
    [ "$(echo "$output" | grep 'counters: none' | wc -c)" -lt 160 ]
    if echo "$output" | grep -q "error:"; then false; fi
    counters_check t.jsonl nometrics
    run "$COSCHED" run -v --profile skylakeX --policy gang --quantum 100ms -- "$PROGS/spin" -c 0.1
    [ "$status" -eq 0 ]
    assert_contains "$output" "counters: perf: perf_event_open of FIXC0 (perf=hw:instructions): No such file or directory"
}

@test "perf with this CPU's profile: instructions, cycles and ipc per job (needs a PMU)" {
    has_pmu || skip "no hardware PMU here (no /sys/bus/event_source/devices/cpu: a VM without a virtual PMU?)"
    prof=$(this_cpu_profile)
    [ -n "$prof" ] || skip "no shipped profile matches this CPU: $("$COSCHED" profiles 2>&1 | tail -1)"
    run "$COSCHED" run --counters perf --profile "$prof" --policy gang --quantum 250ms --trace t.jsonl \
        -- "$PROGS/spin" -t "$NCPU" -c 0.8 ::: "$PROGS/spin" -t "$NCPU" -c 0.8
    echo "$output"
    [ "$status" -eq 0 ]
    counters_check t.jsonl hw
}

# ------------------------------------------------------------------ likwid

@test "likwid: a job's counts are those of the cores it held (needs likwid and a PMU)" {
    prof=$(this_cpu_profile)
    run "$COSCHED" run --counters likwid --profile "${prof:-skylakeX}" --policy gang --quantum 250ms \
        --trace t.jsonl -- "$PROGS/spin" -t "$NCPU" -c 0.8 ::: "$PROGS/spin" -t "$NCPU" -c 0.8
    echo "$output"
    if [ "$status" -ne 0 ]; then
        reason=$(echo "$output" | grep -m1 'error: --counters likwid: ' | sed 's/.*error: --counters likwid: //')
        case $reason in
        "not built with likwid"*|"no hardware counters"*|*"lock file"*|*"accessdaemon mode"*|*"direct access mode"*|*"perf_event mode"*|"cannot count any event"*)
            skip "likwid cannot count here: $reason" ;;
        esac
        false
    fi
    [ -n "$prof" ] || skip "likwid counts here, but no shipped profile matches this CPU"
    counters_check t.jsonl hw
}

# ------------------------------------------------------------------ record, replay

@test "record then replay: identical metrics; the recording has a header and a line per job per step" {
    requires_perf_sw
    run "$COSCHED" run --counters perf --profile test-software --policy gang --quantum 200ms --trace rec.jsonl \
        --record-counters counts.jsonl -- "$PROGS/spin" -t "$NCPU" -c 0.6 ::: "$PROGS/spin" -t "$NCPU" -c 0.6
    echo "$output"
    [ "$status" -eq 0 ]
    assert_equal "$(head -1 counts.jsonl)" "$HDR" "header line"
    entries=$(python3 -c 'import json,sys; print(sum(len(o["jobs"]) for o in map(json.loads, open(sys.argv[1])) if o.get("type") == "step"))' rec.jsonl)
    assert_equal "$(grep -c '^{"job":' counts.jsonl)" "$entries" "records (one per job per step in the trace)"
    assert_equal "$(wc -l < counts.jsonl)" "$((entries + 1))" "lines"

    run "$COSCHED" run --counters replay:counts.jsonl --profile test-software --policy gang --quantum 200ms \
        --trace rep.jsonl -- "$PROGS/spin" -t "$NCPU" -c 0.6 ::: "$PROGS/spin" -t "$NCPU" -c 0.6
    echo "$output"
    [ "$status" -eq 0 ]
    counters_check rec.jsonl same rep.jsonl
}

@test "replay past the end of the recording: said once, then no measurements" {
    printf '%s\n%s\n' "$HDR" '{"job":"spin","step":0,"seq":0,"flags":1,"seconds":0.1,"counts":[1e8,1e8,0,0,0,0,0]}' > short.jsonl
    run "$COSCHED" run --counters replay:short.jsonl --profile test-software --policy gang --quantum 100ms \
        --trace t.jsonl -- "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -c 0.3
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c 'more steps than were recorded')" -eq 1 ]
    # spin's first live step has the recorded counts; after that nothing is measured
    python3 - t.jsonl <<'EOF'
import json, sys
seen = {}
for o in map(json.loads, open(sys.argv[1])):
    if o.get("type") != "step":
        continue
    for j in o["jobs"]:
        k = seen.get(j["name"], 0)
        seen[j["name"]] = k + 1
        want = 1 if (j["name"], k) == ("spin", 0) else 0
        assert j["counts_flags"] == want, (j, want)
        if want:
            assert j["metrics"]["instructions"] == 1e8, j
assert seen.get("spin", 0) >= 2, seen
EOF
}

@test "replay: corrupt, truncated, wrong-profile and unknown-job recordings give FILE:LINE; nothing starts" {
    refused() {  # FILE WANT: refused with WANT in the message, before any job started
        run "$COSCHED" run --counters replay:"$1" --profile test-software --policy gang --quantum 100ms \
            --trace t.jsonl -- "$PROGS/spin" -c 0.2 -p started.pid
        echo "$output"
        [ "$status" -ne 0 ] || { echo "$1: accepted"; return 1; }
        assert_contains "$output" "$2" || return 1
        [ ! -e started.pid ] || { echo "$1: a job started"; return 1; }
        ! grep -q '"event":"start"' t.jsonl 2>/dev/null || { echo "$1: the trace shows a start"; return 1; }
    }
    rec() { printf '{"job":"%s","step":0,"seq":0,"flags":1,"seconds":0.1,"counts":[%s]}' "$1" "$2"; }

    printf '%s\n%s\n' "$HDR" "$(rec spin '1,2,3,x,5,6,7')" > corrupt.jsonl
    # a syntax error: FILE:LINE:COL from jansson, the column that of the 'x'
    refused corrupt.jsonl "error: corrupt.jsonl:2:72: not valid JSON: invalid token near 'x'"
    printf '%s\n%s' "$HDR" "$(rec spin '1,2,3,4,5,6,7')" > truncated.jsonl
    refused truncated.jsonl "error: truncated.jsonl:2: truncated line: expected it to end with a newline"
    printf '%s\n%s\n' "$HDR" '{"job":"spin","step":0,"seq":0,"flags":1,"seconds":0.1,"coun' > cut.jsonl
    refused cut.jsonl "error: cut.jsonl:2:60: not valid JSON: premature end of input near '\"coun'"
    printf '%s\n%s\n' "$HDR" '{"job":"spin","step":0,"step":1,"seq":0,"flags":1,"seconds":0.1,"counts":[]}' > dup.jsonl
    refused dup.jsonl "error: dup.jsonl:2:29: not valid JSON: duplicate object key near '\"step\"'"
    printf '%s\n' '{"format":"cosched-counters","version":1,"profile":"skylakeX","slots":["FIXC0","FIXC1"]}' > wrong.jsonl
    refused wrong.jsonl "error: wrong.jsonl:1: expected profile test-software (the one this run uses), got a recording made with profile skylakeX: give --profile skylakeX"
    printf '%s\n' '{"format":"cosched-counters","version":1,"profile":"test-software","slots":["SW0","SW1"]}' > slots.jsonl
    refused slots.jsonl "error: slots.jsonl:1: expected the event slots of profile test-software (SW0 SW1 SW2 SW3 SW4 SW5 SW6), got (SW0 SW1)"
    printf '%s\n' '{"format":"cosched-counters","version":2,"profile":"test-software","slots":[]}' > version.jsonl
    refused version.jsonl "error: version.jsonl:1: expected format version 1, got version 2"
    printf '%s\n%s\n' "$HDR" "$(rec nosuch '1,2,3,4,5,6,7')" > unknown.jsonl
    refused unknown.jsonl "error: unknown.jsonl:2: expected the name of a job of this run (spin), got job \"nosuch\""
    printf '%s\n%s\n' "$HDR" "$(rec spin '1,2,3,-4,5,6,7')" > negative.jsonl
    refused negative.jsonl "error: negative.jsonl:2: expected a count >= 0 or null as counts[3], got -4"
    printf '%s\n%s\n' "$HDR" "$(rec spin '1,2,3,"4",5,6,7')" > string.jsonl
    refused string.jsonl "error: string.jsonl:2: expected a count (a number >= 0) or null as counts[3], got the string \"4\""
    printf '%s\n%s\n%s\n' "$HDR" "$(rec spin '1,2,3,4,5,6,7')" "$(rec spin '1,2,3,4,5,6,7')" > again.jsonl
    refused again.jsonl "error: again.jsonl:3: expected step 1 of job \"spin\""
    : > empty.jsonl
    refused empty.jsonl "error: empty.jsonl:1: expected the header line"
    refused missing.jsonl "error: --counters replay:missing.jsonl: cannot read the recording missing.jsonl: No such file or directory"
    no_cosched_leftovers
}

@test "replay reader unit test (tests/progs/replay_parse)" {
    [ -x "$PROGS/replay_parse" ] || skip "$PROGS/replay_parse is not built (make check builds it)"
    run "$PROGS/replay_parse" "$COSCHED_SRCDIR/profiles/test-software.txt" "$BATS_TEST_TMPDIR"
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "ok "
}
