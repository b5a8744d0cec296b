#!/usr/bin/env bats
# 20-engine: the engine on real processes with the default mechanism (auto).
# Assertions read the kernel (/proc, cgroup files); the trace is checked
# against what /proc says where both are available.

load helpers/common
load helpers/jobs
load helpers/tmpdir

setup() {
    cd "$BATS_TEST_TMPDIR"
    all_cpus
}

@test "jobs run to completion; the summary lists each; exit 0" {
    run "$COSCHED" run --policy gang --quantum 100ms -- "$PROGS/spin" -c 0.2 ::: "$PROGS/spin" -c 0.2 ::: true
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "summary (policy gang"
    [ "$(echo "$output" | grep -cE '^ +[0-9]+ (spin|spin-2|true) .*exit 0$')" -eq 3 ]
    no_cosched_leftovers
}

@test "exit codes propagate: the first failed job's status" {
    run "$COSCHED" run --policy tft --quantum 50ms -- "$PROGS/spin" -c 0.1 ::: "$PROGS/spin" -c 0.1 -x 3
    echo "$output"
    [ "$status" -eq 3 ]
    assert_contains "$output" "job 2 (spin-2): exited with status 3"
    assert_contains "$output" "exit 3 (failed)"
    run "$COSCHED" run --policy gang -- sh -c 'kill -TERM $$'
    [ "$status" -eq 143 ]
}

@test "gang: exactly one job per step on all managed cpus (trace and freezer agree)" {
    "$COSCHED" run --policy gang --quantum 200ms --trace t.jsonl \
        -- "$PROGS/spin" -t "$NCPU" -c 0.8 -p a.pid ::: "$PROGS/spin" -t "$NCPU" -c 0.8 -p b.pid &
    cs=$!
    two_pids
    # the kernel shows one running while the other is stopped/frozen, both ways
    # round, in one sample each (on a busy machine a 200 ms quantum can end
    # between a read that found one held and the read of the other)
    wait_for 10 'job_is_held "$b" && ! job_is_held "$a"'
    wait_for 10 'job_is_held "$a" && ! job_is_held "$b"'
    assert_equal "$(task_cpus "$a")" "$ALL" "cpus of job a while running"
    wait "$cs"
    python3 "$HELPERS/trace_check.py" t.jsonl gang "$ALL"
    no_cosched_leftovers
}

# CPU shares are checked on runs the test does not poll, against the CPU time
# the rest of the machine left to the run (/proc/stat around it: stat_mark).
@test "CPU time follows the plan: gang and tft (within 35 % of what was available, frozen jobs ~0)" {
    stat_mark g.stat
    run "$COSCHED" run --policy gang --quantum 200ms --trace g.jsonl \
        -- "$PROGS/spin" -t "$NCPU" -c 0.8 ::: "$PROGS/spin" -t "$NCPU" -c 0.8
    stat_mark g.stat
    [ "$status" -eq 0 ]
    python3 "$HELPERS/trace_check.py" g.jsonl shares 0.35 g.stat
    stat_mark t.stat
    run "$COSCHED" run --policy tft --quantum 200ms --trace t.jsonl \
        -- "$PROGS/spin" -t 2 -c 0.8 ::: "$PROGS/spin" -t 2 -c 0.8 ::: "$PROGS/spin" -t 2 -c 0.8
    stat_mark t.stat
    [ "$status" -eq 0 ]
    python3 "$HELPERS/trace_check.py" t.jsonl shares 0.35 t.stat
}

@test "tft: two jobs at a time, each on its half, disjoint (from /proc)" {
    requires multicore
    "$COSCHED" run --policy tft --quantum 200ms --trace t.jsonl \
        -- "$PROGS/spin" -t 2 -c 1.2 -p a.pid ::: "$PROGS/spin" -t 2 -c 1.2 -p b.pid &
    cs=$!
    two_pids
    ca=$(task_cpus "$a") cb=$(task_cpus "$b")
    echo "a on $ca, b on $cb"
    [ "$(echo "$ca" | wc -l)" -eq 1 ]
    [ "$(echo "$cb" | wc -l)" -eq 1 ]
    [ "$ca" != "$cb" ]
    [ "$(cpulist_count "$ca")" -eq $((NCPU / 2)) ]
    if job_is_held "$a"; then false; fi
    if job_is_held "$b"; then false; fi
    wait "$cs"
    python3 "$HELPERS/trace_check.py" t.jsonl tft "$ALL"
}

@test "tft with three jobs rotates fairly" {
    requires multicore
    run "$COSCHED" run --policy tft --quantum 100ms --trace t.jsonl \
        -- "$PROGS/spin" -w 1.5 ::: "$PROGS/spin" -w 1.5 ::: "$PROGS/spin" -w 1.5
    [ "$status" -eq 0 ]
    python3 "$HELPERS/trace_check.py" t.jsonl tft "$ALL"
    python3 "$HELPERS/trace_check.py" t.jsonl fair 1
}

@test "linux: every job on every managed cpu, never frozen" {
    run "$COSCHED" run --policy linux --quantum 100ms --trace t.jsonl -- "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -c 0.3
    [ "$status" -eq 0 ]
    python3 "$HELPERS/trace_check.py" t.jsonl linux "$ALL"
}

@test "threads created late and child processes stay confined" {
    requires multicore
    "$COSCHED" run --policy tft --quantum 100ms \
        -- "$PROGS/spin" -t 1 -L 0.5 -T a.tids -p a.pid -w 20 ::: "$PROGS/spin" -f 2 -p b.pid -w 20 &
    cs=$!
    two_pids
    # the late thread appears, and it is confined like the first
    wait_for 10 lines_at_least a.tids 2
    wait_for 5 'test "$(task_cpus "$a" | wc -l)" -eq 1'
    [ "$(cpulist_count "$(task_cpus "$a")")" -eq $((NCPU / 2)) ]
    # b's children: same cpus as b, frozen when b is frozen
    kids=$(pgrep -P "$b")
    [ "$(echo "$kids" | wc -w)" -eq 2 ]
    for k in $kids; do
        wait_for 5 'test "$(task_cpus "$k")" = "$(task_cpus "$b")"'
    done
    kill -TERM "$cs"
    wait "$cs" || true
    no_cosched_leftovers
}

@test "--window restarts jobs and counts completions" {
    run "$COSCHED" run --policy gang --quantum 50ms --window 2 --trace t.jsonl \
        -- "$PROGS/spin" -c 0.05 ::: "$PROGS/spin" -c 0.05
    echo "$output"
    [ "$status" -eq 0 ]
    # each job completed several times
    for name in spin spin-2; do
        done=$(echo "$output" | awk -v n="$name" '$2 == n {print $4}')
        [ "$done" -ge 3 ]
    done
    [ "$(grep -c '"event":"start"' t.jsonl)" -ge 6 ]
    # the window's size is said, and a run the window's end stopped is no failure
    assert_contains "$output" "window 2 s"
    assert_contains "$output" "ok, last run cut by the window"
    [[ $output != *"signal 9"* ]]
}

@test "output: prefixed lines, files, inherit" {
    run "$COSCHED" run --policy linux -- sh -c 'echo hello; echo oops >&2' ::: echo world
    [ "$status" -eq 0 ]
    assert_contains "$output" "[sh] hello"
    assert_contains "$output" "[sh] oops"
    assert_contains "$output" "[echo] world"
    mkdir outdir
    run "$COSCHED" run --policy linux --output outdir -- sh -c 'echo to-file; echo err-file >&2'
    [ "$status" -eq 0 ]
    assert_equal "$(cat outdir/sh.out)" "to-file"
    assert_equal "$(cat outdir/sh.err)" "err-file"
    run "$COSCHED" run --policy linux --output inherit -- echo plain
    assert_contains "$output" "plain"
    if echo "$output" | grep -q '\[echo\] plain'; then false; fi
}

@test "job file options: name, threads, cwd reach the job" {
    mkdir wd
    cat > j.jobs <<'JOBS'
# two jobs
name=first threads=1 cwd=wd -- sh -c 'echo "$COSCHED_JOB_NAME $OMP_NUM_THREADS $(basename $PWD)"'

name=second -- sh -c 'echo "$COSCHED_JOB_ID $OMP_NUM_THREADS ${OMP_WAIT_POLICY-unset} ${GOMP_SPINCOUNT-unset} ${KMP_BLOCKTIME-unset}"'
JOBS
    run env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u KMP_BLOCKTIME "$COSCHED" run --policy gang --jobs j.jobs
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "[first] first 1 wd"
    # sh is dynamically linked: libcosched-omp.so is preloaded and the wait
    # policy left alone (57-omp-shim tests where passive waiting stays)
    assert_contains "$output" "[second] 2 $(nproc) unset unset unset"
}

@test "OpenMP environment: user's settings win, --omp-env off leaves it alone" {
    OMP_NUM_THREADS=7 OMP_WAIT_POLICY=active run "$COSCHED" run --policy linux -- sh -c 'echo "n=$OMP_NUM_THREADS w=$OMP_WAIT_POLICY"'
    assert_contains "$output" "[sh] n=7 w=active"
    run env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY "$COSCHED" run --policy linux --omp-env off -- sh -c 'echo "n=${OMP_NUM_THREADS-unset} w=${OMP_WAIT_POLICY-unset}"'
    assert_contains "$output" "[sh] n=unset w=unset"
}

@test "a job ending mid-quantum ends the epoch at once" {
    run "$COSCHED" run --policy gang --quantum 5s --trace t.jsonl -- "$PROGS/spin" -c 0.2 ::: "$PROGS/spin" -c 0.2
    [ "$status" -eq 0 ]
    # two 5 s quanta would take 10 s; the run ends with the jobs
    python3 - t.jsonl <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l]
assert steps[-1]["end"] < 4.0, steps[-1]
assert any(s["end"] - s["start"] < s["planned"] * 0.5 for s in steps), steps
PY
}

# What a terminal shows is what remains of each line after the last erase
# (\r ESC[K): job output and messages must begin such a remainder, never
# follow the progress text on its line (issue 16 item 2: "completed
# 0[compute] compute: 140 iterations").
@test "progress line on a terminal: never on a line with job output or messages; none when stderr is not one, nor with --output inherit or --quiet" {
    command -v script >/dev/null || skip "script(1) not installed (bsdutils)"
    requires python3
    script -qec "'$COSCHED' run --policy gang --quantum 50ms -- sh -c 'for i in 1 2 3 4 5 6; do echo out\$i; sleep 0.04; done' ::: '$PROGS/spin' -c 0.1" /dev/null > tty.out
    script -qec "'$COSCHED' run --policy gang --quantum 50ms --window 0.5 -- sh -c 'for i in 1 2 3; do echo win\$i; sleep 0.04; done' ::: '$PROGS/spin' -c 0.05" /dev/null > win.out
    run python3 - tty.out win.out <<'PY'
import sys
def shown(path):
    # the lines a terminal shows: \r goes to column 0, ESC[K erases to the end of the line
    raw = open(path, encoding="utf-8", errors="replace").read()
    lines, cur, col, i = [], [], 0, 0
    while i < len(raw):
        if raw.startswith("\x1b[K", i):
            del cur[col:]
            i += 3
            continue
        c = raw[i]
        i += 1
        if c == "\r":
            col = 0
        elif c == "\n":
            lines.append("".join(cur))
            cur, col = [], 0
        else:
            cur[col:col + 1] = [c]
            col += 1
    return raw, lines + ["".join(cur)]
def check(lines, whats):
    for l in lines:
        for what in whats:
            if what in l:
                assert l.startswith(what), "shares a line with the progress text: %r" % l
raw, lines = shown(sys.argv[1])
assert "epoch" in raw and "of 2 jobs completed" in raw, raw
assert len([l for l in lines if l.startswith("[sh] out")]) == 6, lines
check(lines, ("[sh] out", "cosched: summary", "cosched: job"))
raw, lines = shown(sys.argv[2])
assert "runs completed" in raw and "of the 0.5s window left" in raw, raw
check(lines, ("[sh] win", "cosched: window of"))
assert any(l.startswith("cosched: window of") for l in lines), lines
PY
    echo "$output"
    [ "$status" -eq 0 ]
    script -qec "'$COSCHED' run --policy gang --quantum 50ms --output inherit -- '$PROGS/spin' -c 0.1" /dev/null > inherit.out
    if grep -q "epoch" inherit.out; then cat -v inherit.out; false; fi
    # --quiet: warnings and errors only, on a terminal too; --progress on still draws it
    script -qec "'$COSCHED' run -q --policy gang --quantum 50ms -- '$PROGS/spin' -c 0.1" /dev/null > quiet.out
    if grep -q "epoch" quiet.out; then cat -v quiet.out; false; fi
    script -qec "'$COSCHED' run -q --progress on --policy gang --quantum 50ms -- '$PROGS/spin' -c 0.1" /dev/null > quieton.out
    grep -q "epoch" quieton.out || { cat -v quieton.out; false; }
    run "$COSCHED" run --policy gang --quantum 50ms -- "$PROGS/spin" -c 0.1
    [ "$status" -eq 0 ]
    if echo "$output" | grep -q "completed"; then false; fi
}

@test "job.memory: the policy sees where a job's memory is (kernel's per-node counts)" {
    # stream with 3 x 32 MiB arrays: at least 96 MiB resident once it runs
    run "$COSCHED" run --policy-path "$COSCHED_SRCDIR/tests/policies" --policy memshow --quantum 300ms \
        -- "$DEMO/stream" -m 32 -s 2.5
    echo "$output"
    [ "$status" -eq 0 ]
    pages=$(echo "$output" | awk '/job 1 memory pages/ { p = $8 } END { print p + 0 }')
    [ "$pages" -ge 24000 ]
    first_node=$(cosched_first_numa_node)
    assert_contains "$output" "home $first_node"
}

@test "trace: valid JSON whatever the job names; jobs waiting for their first quantum are frozen, not stuck" {
    requires python3
    # a name with a quote, a backslash and a tab; four jobs under gang, so three wait
    # frozen in the first step without having run yet (they were "stuck" before)
    printf '%s\n' "name='a\"b\\c' -- $PROGS/spin -c 0.15" "name=two -- $PROGS/spin -c 0.15" \
        "name=three -- $PROGS/spin -c 0.15" "name=four -- $PROGS/spin -c 0.15" > jobs.txt
    run "$COSCHED" run --policy gang --quantum 100ms --trace t.jsonl --jobs jobs.txt
    echo "$output"
    [ "$status" -eq 0 ]
    run python3 - t.jsonl <<'PY'
import json, sys
names, states = set(), []
for n, line in enumerate(open(sys.argv[1]), 1):
    d = json.loads(line)                       # every line parses
    if d["type"] == "job":
        names.add(d["name"])
    elif d["type"] == "step":
        states += [j["state"] for j in d["jobs"]]
assert 'a"b\\c' in names, names
assert "stuck" not in states, states
assert states.count("frozen") >= 3, states
print("ok", len(states))
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "--quiet: only warnings and errors, no summary; -v: debug (each plan)" {
    run "$COSCHED" run -q --policy gang --quantum 100ms -- "$PROGS/spin" -c 0.1 ::: "$PROGS/spin" -c 0.1 -x 3
    echo "$output"
    [ "$status" -eq 3 ]
    [[ $output != *"summary"* ]]
    assert_contains "$output" "job 2 (spin-2): exited with status 3"     # a warning still shows
    run "$COSCHED" run -v --policy gang --quantum 100ms -- "$PROGS/spin" -c 0.1
    [ "$status" -eq 0 ]
    assert_contains "$output" "plan() took"
    assert_contains "$output" "summary (policy gang"
}

# The idle time comes from the kernel (/proc/stat), which other processes on
# the node change: only bounds are checked, never that it is large.
@test "idle_frozen: every step says the cpus' idle CPU-s while a job was held, within the cpus x the step; 0 when none was" {
    for ctl in auto signals; do
        run "$COSCHED" run --control $ctl --policy gang --quantum 100ms --trace g.$ctl.jsonl \
            -- "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -t "$NCPU" -c 0.3
        echo "$output"
        [ "$status" -eq 0 ]
        assert_contains "$output" "idle while a job was frozen: "
        [[ $output != *"idle while a job was frozen: unknown"* ]]
    done
    run "$COSCHED" run --policy linux --quantum 100ms --trace l.jsonl -- "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -c 0.3
    [ "$status" -eq 0 ]
    run "$COSCHED" run --policy gang --quantum 100ms --trace one.jsonl -- "$PROGS/spin" -c 0.3
    [ "$status" -eq 0 ]
    run python3 - "$NCPU" g.auto.jsonl g.signals.jsonl l.jsonl one.jsonl <<'PY'
import json, sys
ncpu = int(sys.argv[1])
for path in sys.argv[2:]:
    held_steps = 0
    for line in open(path):
        d = json.loads(line)
        if d["type"] != "step":
            continue
        idle, dt = d["idle_frozen"], d["end"] - d["start"]
        held = any(j["state"] == "frozen" for j in d["jobs"])
        assert idle["nobody"] >= 0 and idle["held"] >= 0, (path, d)
        # idle time moves in ticks (10 ms at USER_HZ 100), read at both ends of the step, per cpu
        assert idle["nobody"] + idle["held"] <= ncpu * (dt + 0.025), (path, d["seq"], idle, dt)
        if all(j["state"] == "run" for j in d["jobs"]):    # nobody held ("stuck": the plan's word unknown)
            assert idle == {"nobody": 0, "held": 0}, (path, d["seq"], idle)
        held_steps += held
    # gang holds one of two jobs in every step but the last job's; linux and a lone job hold none
    assert (held_steps > 0) == path.startswith("g."), (path, held_steps)
print("ok")
PY
    echo "$output"
    [ "$status" -eq 0 ]
    no_cosched_leftovers
}
