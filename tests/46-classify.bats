#!/usr/bin/env bats
# 46-classify: `cosched classify -- CMD` (launcher/cli/run.c, lua/policies/classify.lua)
# on a real program.  Counting uses the software events of
# profiles/test-software.txt: the class it gives means nothing (the profile's
# CAVEAT says so), so the tests check that every field is there and has the
# right type, not its value.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
    requires cosched python3
    cd "$BATS_TEST_TMPDIR"
    shipped_data_only
}

teardown() {
    cleanup_cosched
}

classify() {
    run "$COSCHED" classify --store st --counters perf --profile test-software --quantum 100ms "$@"
}

@test "classify prints every field, stops the program once characterized, stores the result" {
    classify -- "$PROGS/spin" -t 2 -c 5 -p spin.pid
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    for field in class ipc_standalone ipc_folded fp bw_l1 bw_l2 bw_llc mpki gang_only degraded counters stored; do
        echo "$output" | grep -Eq "^$field +[^ ]" || { echo "no field $field in: $output"; false; }
    done
    echo "$output" | grep -Eq '^fp +-?[0-9.]+(e-?[0-9]+)?$' || { echo "fp is not a number: $output"; false; }
    assert_contains "$output" "degraded         no"
    assert_contains "$output" "program          stopped once characterized"
    assert_contains "$output" "a test profile: the numbers mean nothing"
    # the program was stopped, well before its 5 s of CPU
    pid=$(cat spin.pid)
    ! pid_alive "$pid" || { echo "spin $pid still runs"; false; }
    cpu=$(echo "$output" | awk '$2 == "spin" && $3 == "1" { print $6 }')
    python3 -c "import sys; sys.exit(0 if float('$cpu') < 4.0 else 1)" || { echo "cpu_s $cpu: not stopped early"; false; }
    # stored, with the key of this command
    f=$(echo "$output" | awk '$1 == "stored" { print $2 }')
    [ -f "$f" ] || { echo "no store file '$f': $(ls -la st 2>&1)"; false; }
    python3 - "$f" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
assert e["key"]["args"] == ["-t", "2", "-c", "5", "-p", "spin.pid"], e["key"]
assert e["class"] in ("S", "C", "N"), e["class"]
assert isinstance(e["fp"], float), e["fp"]
PY
    # a second classify answers from the store without running the program
    classify -- "$PROGS/spin" -t 2 -c 5 -p spin.pid
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    assert_contains "$output" "program          not run: its profile was in the store"
}

@test "classify --json: one JSON object on stdout with every field" {
    "$COSCHED" classify --json --store st --counters perf --profile test-software --quantum 100ms \
        -- "$PROGS/spin" -t 2 -c 5 > out.json 2> err.txt || { cat err.txt; false; }
    python3 - out.json <<'PY'
import json, sys, numbers
r = json.load(open(sys.argv[1]))
for k in ("class", "ipc_standalone", "ipc_folded", "fp", "mpki", "bw", "gang_only", "degraded", "counters", "stored"):
    assert k in r, "no %s in %r" % (k, r)
assert r["class"] in ("S", "C", "N"), r
assert isinstance(r["fp"], numbers.Real) and isinstance(r["ipc_standalone"], numbers.Real), r
assert set(r["bw"]) == {"l1", "l2", "llc"}, r["bw"]
assert r["degraded"] is False and r["counters"] == "perf" and r["profile"] == "test-software", r
assert r["stopped"] is True and r["stored"], r
PY
}

@test "classify without counters: the degraded message, exit 0, nothing stored" {
    run "$COSCHED" classify --store st --counters none --quantum 100ms -- "$PROGS/spin" -t 2 -c 5 -p spin.pid
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    assert_contains "$output" "class unknown: nothing could be counted ("
    assert_contains "$output" "); give class= in job files"
    assert_contains "$output" "stored           no (a degraded result is never stored)"
    # nothing can be counted: the result comes in the first plan and the
    # program is stopped at once, possibly before it wrote its pid file
    if [ -s spin.pid ] && pid_alive "$(cat spin.pid)"; then false; fi
    # stopped as asked: the summary does not read as a failure (as "signal 15" alone did)
    assert_contains "$output" "ok, stopped by cosched (signal 15)"
    # at once: not after 3 s of characterization quanta that measure nothing (issue 16 item 6)
    cpu=$(echo "$output" | awk '$2 == "spin" && $3 == "1" { print $6 }')
    python3 -c "import sys; sys.exit(0 if float('$cpu') < 1.0 else 1)" || { echo "cpu_s $cpu: not stopped at once"; false; }
    [ ! -e st ] || [ -z "$(ls -A st)" ] || { echo "stored: $(ls -A st)"; false; }
    run "$COSCHED" classify --json --store st --counters none --quantum 100ms -- "$PROGS/spin" -c 5
    [ "$status" -eq 0 ]
    echo "$output" | grep '^{' | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["degraded"] and r["class"] == "unknown" and r["fp"] is None, r'
}

@test "classify --json --quiet with the counters auto finds none: the JSON itself says why (no 'message above')" {
    has_pmu && skip "this machine has a hardware PMU: auto may count here, there is no reason to give"
    run --separate-stderr "$COSCHED" classify --json --quiet --store st --quantum 100ms -- "$PROGS/spin" -c 5
    [ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
    [ -z "$stderr" ] || { echo "--quiet printed: $stderr"; false; }
    echo "$output" | python3 -c '
import json, sys
r = json.load(sys.stdin)
why = r["degraded_reason"]
assert r["degraded"] and r["counters"] == "none", r
# a CPU with a shipped profile: its events cannot be counted; a CPU without one: no profile covers it
assert "above" not in why and ("cannot be counted here" in why or "no profile covers" in why), why
'
}

@test "classify --to-end lets the program finish" {
    classify --to-end -- "$PROGS/spin" -t 2 -c 1
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    assert_contains "$output" "program          ran to its end"
    echo "$output" | grep -Eq ' spin .* exit 0$' || { echo "$output"; false; }
}

@test "classify: no command, an unknown command, two commands: exit 2 with a message" {
    run "$COSCHED" classify --counters none
    [ "$status" -eq 2 ]
    assert_contains "$output" "classify: no command: give the program to classify after '--'"
    run "$COSCHED" classify --counters none -- /nonexistent/prog
    [ "$status" -eq 2 ]
    assert_contains "$output" "command '/nonexistent/prog' does not exist"
    run "$COSCHED" classify -- true ::: true
    [ "$status" -eq 2 ]
    assert_contains "$output" "classify: one program at a time"
    run "$COSCHED" classify --window 5 -- true
    [ "$status" -eq 2 ]
    assert_contains "$output" "unknown option '--window' (see cosched classify --help)"
}

@test "classify: a program that fails before a result: exit 1" {
    classify -- "$PROGS/spin" -c 0.05 -x 3
    [ "$status" -eq 1 ] || { echo "$output"; false; }
    assert_contains "$output" "classify: spin exited with status 3 after"
    assert_contains "$output" "before its characterization completed: no result"
    [ ! -e st ] || [ -z "$(ls -A st)" ]
}
