#!/usr/bin/env bats
# 10-cli: option and job-file checking.  Every bad input gives one message that
# names it, exits 2 and starts nothing (checked: no job process, no cgroup).

load helpers/common
load helpers/jobs
load helpers/tmpdir

# run cosched expecting a usage error: exit 2, the message, nothing started
refuse() {
    local want=$1; shift
    run "$COSCHED" "$@"
    echo "output: $output"
    [ "$status" -eq 2 ]
    assert_contains "$output" "$want"
    [ ! -e started ]
    no_cosched_leftovers
}

# bad_jobs FILE CONTENT WANT: a job file FILE holding CONTENT (a printf
# format) is refused with WANT
bad_jobs() {
    printf "$2" > "$1"
    refuse "$3" run --jobs "$1"
}

@test "--version and --help" {
    run "$COSCHED" --version
    [ "$status" -eq 0 ]
    assert_contains "$output" "cosched 0.1.0"
    run "$COSCHED" --help
    [ "$status" -eq 0 ]
    assert_contains "$output" "topology"
    run "$COSCHED" run --help
    [ "$status" -eq 0 ]
    assert_contains "$output" "--quantum DURATION"
}

@test "unknown command and unknown option" {
    run "$COSCHED" frobnicate
    [ "$status" -eq 2 ]
    assert_contains "$output" "unknown command 'frobnicate'"
    refuse "unknown option '--frob'" run --frob -- touch started
    refuse "option --quantum needs an argument" run --quantum
}

@test "unknown policy lists the known ones" {
    refuse "unknown policy 'tfx'" run --policy tfx -- touch started
    assert_contains "$output" "gang"
    assert_contains "$output" "tft"
    assert_contains "$output" "linux"
}

@test "hints for common mistakes: did you mean, options before the command, help CMD, a forgotten --, PATH" {
    # a typo or two away: the closest name
    refuse "unknown option '--polcy' (did you mean --policy? see cosched run --help)" run --polcy tft -- touch started
    refuse "unknown policy 'flac' (did you mean flca? known:" run --policy flac -- touch started
    refuse "unknown command 'rnu' (did you mean run? known:" rnu -- touch started
    refuse "unknown option '--jsno' (did you mean --json? see cosched status --help)" status --jsno
    # nothing close: no guess
    refuse "unknown option '--frobnicate' (see cosched run --help)" run --frobnicate -- touch started
    refuse "unknown policy 'zzzz' (known:" run --policy zzzz -- touch started
    if [[ $output == *"did you mean"* ]]; then false; fi
    # a command's option before the command
    refuse "'--verbose' is an option of a command: put it after the command (cosched run --verbose ...)" \
        --verbose run -- touch started
    # help CMD is CMD --help
    run "$COSCHED" help run
    [ "$status" -eq 0 ]
    assert_contains "$output" "--quantum DURATION"
    refuse "help: unknown command 'simulat' (did you mean simulate?" help simulat
    # a job line without " -- ": its first option looks like the command
    printf 'threads=2 touch started\n' > nodash.jobs
    refuse "command 'threads=2' was not found in PATH (a job line's options end with ' -- ' before the command: threads=2 ... -- COMMAND)" \
        run --jobs nodash.jobs
    # a plain name that is beside the job file but not on PATH
    mkdir bin
    printf '#!/bin/sh\ntouch started\n' > bin/mytool
    chmod +x bin/mytool
    printf -- '-- mytool\n' > bin/tool.jobs
    refuse "command 'mytool' was not found in PATH (there is bin/mytool: a plain name is looked up in PATH only; write its path, or run with PATH=bin:\$PATH)" \
        run --jobs bin/tool.jobs
    # simulate: the model names that exist
    refuse "--node paper01: no such file, and no paper01.node in" simulate --node paper01 --apps table2 --mix 3mm,jacobi
    assert_contains "$output" "(did you mean paper001? known:"
    refuse "--mix: unknown app 'jacobii' (did you mean jacobi? apps of " simulate --node paper001 --apps table2 --mix 3mm,jacobii
    refuse "--profile skylakex: no skylakex.txt in the profile search path (did you mean skylakeX? cosched profiles lists them)" \
        run --profile skylakex -- touch started
}

# Short options (issue 16 deliver 5; the letters and why: cosched(1) OPTIONS
# FOR RUN).  Each does what its long form does, read back from the kernel
# (the job's Cpus_allowed_list), the trace's run line, the files and the
# messages; the run line of the short forms is the long forms' exactly.
@test "short options: -p -t -c -w -o -q -v -h do what --policy --quantum --cpus --window --output --quiet --verbose --help do" {
    # the first cpu cosched may use: a set smaller than the default on a machine of two or more
    local c0
    c0=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status | cut -d, -f1 | cut -d- -f1)
    run "$COSCHED" run -p gang -t 50ms -c "$c0" -w 2s --trace short.jsonl -- sh -c 'grep Cpus_allowed_list /proc/self/status'
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "Cpus_allowed_list:	$c0"
    run "$COSCHED" run --policy gang --quantum 50ms --cpus "$c0" --window 2s --trace long.jsonl -- sh -c 'grep Cpus_allowed_list /proc/self/status'
    [ "$status" -eq 0 ]
    assert_equal "$(head -1 short.jsonl)" "$(head -1 long.jsonl)" "run line of the short forms"
    python3 - short.jsonl "$c0" <<'PY'
import json, sys
run = json.loads(open(sys.argv[1]).readline())
want = {"type": "run", "policy": "gang", "quantum": 0.05, "window": 2, "cpus": sys.argv[2]}
assert all(run[k] == v for k, v in want.items()), run
PY
    # grouped letters, the argument attached: -qc0 is --quiet --cpus 0
    run "$COSCHED" run -qc"$c0" -t50ms -p gang -- sh -c 'grep Cpus_allowed_list /proc/self/status'
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "Cpus_allowed_list:	$c0"
    if [[ $output == *summary* ]]; then echo "-q: the summary is still printed"; false; fi
    # -o: inherit (no [name] prefix), or a directory of NAME.out files
    run "$COSCHED" run -q -o inherit -- echo short-o
    assert_equal "$output" "short-o" "-o inherit"
    mkdir out
    run "$COSCHED" run -q -o out -- echo short-o
    [ "$status" -eq 0 ]
    assert_equal "$output" "" "-q -o DIR: nothing on the terminal"
    assert_equal "$(cat out/echo.out)" "short-o" "-o DIR: DIR/echo.out"
    # -v: debug messages
    run "$COSCHED" run -v -p gang -- true
    assert_contains "$output" "cosched: debug: policy gang: loaded from"
    # -h: the help, with the letters
    run "$COSCHED" run -h
    [ "$status" -eq 0 ]
    for o in "-p, --policy NAME" "-t, --quantum DURATION" "-c, --cpus LIST" "-w, --window DURATION" \
        "-o, --output MODE" "-v, --verbose" "-q, --quiet" "-h, --help" "    --jobs FILE"; do
        assert_contains "$output" "  $o "
    done
    # classify, topology, serve, simulate, report: their letters are the same options
    refuse "--quantum '5ms': expected a duration from 10ms to 60s" classify -t 5ms -- touch started
    refuse "--cpus 'x-y': expected a cpu list" classify -c x-y -- touch started
    run "$COSCHED" topology --topology "synthetic:pack:2 core:2 pu:2" -c core:1
    assert_contains "$output" "managed cpus: 2-3"
    refuse "--quantum '5ms': expected a duration from 10ms to 60s" serve -t 5ms --socket "$BATS_TEST_TMPDIR/s"
    run "$COSCHED" serve -h
    assert_contains "$output" "  -p, --policy NAME "
    assert_contains "$output" "  -t, --quantum DURATION "
    sim() { "$COSCHED" simulate --node paper001 --apps table2 --mix jacobi,stream --json "$@" 2>/dev/null |
        python3 -c 'import json, sys; d = json.load(sys.stdin)
for r in d["results"]: r.pop("wall_s")
print(json.dumps(d, sort_keys=True))'; }
    a=$(sim -p gang,tft -t 500ms -w 20s)
    b=$(sim --policy gang,tft --quantum 500ms --window 20s)
    assert_equal "$a" "$b" "simulate's short forms"
    assert_contains "$a" '"window": 20'
    assert_contains "$a" '"quantum": 0.5'
    assert_contains "$a" '"policy": "tft"'
    run "$COSCHED" report -h
    assert_contains "$output" "  -o, --output FILE "
    run "$COSCHED" report long.jsonl -o long.svg
    [ "$status" -eq 0 ]
    grep -q '<svg' long.svg
    # cosched(1) OPTIONS FOR RUN gives each of run's letters as --help does, and no other
    local man=$COSCHED_SRCDIR/share/man/cosched.1 got want
    want=$("$COSCHED" run --help | sed -n 's/^  -\([a-zA-Z]\), --\([a-z-]*\).*/\1 \2/p' | grep -v '^h help' | sort)
    got=$(sed -n 's/^\\fB\\-\([a-zA-Z]\)\\fR, \\fB\\-\\-\([a-z\\-]*\)\\fR.*/\1 \2/p; s/^\.BR \\-\([a-zA-Z]\) ", " \\-\\-\([a-z\\-]*\).*/\1 \2/p' "$man" |
        sed 's/\\-/-/g' | sort)
    [ -n "$want" ]
    assert_equal "$got" "$want" "the letters of cosched(1) OPTIONS FOR RUN and of cosched run --help (-h aside)"
    # -V is --version, -h is --help
    assert_equal "$("$COSCHED" -V)" "$("$COSCHED" --version)" "-V"
    assert_equal "$("$COSCHED" -h)" "$("$COSCHED" --help)" "-h"
}

@test "short options: an unknown letter, a long option with one dash, a missing argument: one message each" {
    refuse "unknown option '-x' (see cosched run --help)" run -x -- touch started
    # inside a group, before or after a known letter
    refuse "unknown option '-x' (see cosched run --help)" run -vx -- touch started
    refuse "unknown option '-x' (see cosched run --help)" run -xv -- touch started
    # a long option with one dash: the long one as the hint, also where getopt
    # could read letters and an argument (-policy: -p olicy; -trace: -t race)
    refuse "unknown option '-quantum' (did you mean --quantum? see cosched run --help)" run -quantum 1s -- touch started
    refuse "unknown option '-policy' (did you mean --policy? see cosched run --help)" run -policy gang -- touch started
    refuse "unknown option '-trace' (did you mean --trace? see cosched run --help)" run -trace t.jsonl -- touch started
    refuse "unknown option '-jsno' (did you mean --json? see cosched status --help)" status -jsno
    # a letter of run that classify does not take
    refuse "unknown option '-w' (see cosched classify --help)" classify -w 5 -- touch started
    refuse "unknown option '-Z' (see cosched simulate --help)" simulate -Z
    refuse "report: unknown option '-x' (see cosched report --help)" report t.jsonl -x
    refuse "unknown option '-x' (see cosched serve --help)" serve -x
    # a missing argument names the letter, alone or at the end of a group
    refuse "option -p needs an argument" run -p
    refuse "option -t needs an argument" run -vt
    refuse "option -c needs an argument" topology -c
    refuse "report: option -o needs an argument" report t.jsonl -o
    # the job's own options after -- stay the job's
    run "$COSCHED" run -q -p gang -- sh -c 'echo "$@"' sh -p -t -x
    assert_equal "$output" "[sh] -p -t -x" "a job's own short options"
}

@test "--quantum 0, out of range, malformed" {
    refuse "--quantum '0': expected a duration from 10ms to 60s" run --quantum 0 -- touch started
    refuse "--quantum '2m'" run --quantum 2m -- touch started
    refuse "--quantum 'fast'" run --quantum fast -- touch started
    refuse "--quantum '5ms'" run --quantum 5ms -- touch started
}

@test "units and ranges: every duration option takes units or plain seconds; job-file priority -1000..1000" {
    refuse "--window '1 s': expected a duration" run --window '1 s' -- touch started
    refuse "--kill-timeout '1sec': expected a duration" run --kill-timeout 1sec -- touch started
    refuse "--quantum '-1s'" run --quantum -1s -- touch started
    bad_jobs p.jobs 'priority=1001 -- touch started\n' "p.jobs:1: priority= must be an integer from -1000 to 1000"
    # the range of --cosched=POLICY:priority= (cosched-spank(8)); the old -100..100 reads as before
    printf 'priority=-1000 -- true\npriority=1000 -- true\npriority=100 -- true\n' > ok.jobs
    run "$COSCHED" run --policy gang --quantum 0.05 --kill-timeout 500ms --jobs ok.jobs
    echo "$output"
    [ "$status" -eq 0 ]
    run "$COSCHED" run --policy gang --quantum 50ms --window 0.5s -- true
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "window"
}

@test "a command that does not exist or is not executable" {
    refuse "command 'no-such-command-xyz' was not found in PATH" run -- no-such-command-xyz
    printf '#!/bin/sh\ntouch started\n' > notexec
    refuse "command './notexec' is not executable" run -- ./notexec
    refuse "command './missing' does not exist" run -- true ::: ./missing
}

@test "empty job file, missing job file, bad job lines report file:line" {
    bad_jobs empty.jobs '# only a comment\n\n' "empty.jobs: no jobs"
    refuse "--jobs nope.jobs: No such file or directory" run --jobs nope.jobs
    bad_jobs bad.jobs 'touch started\nthreads=zero -- touch started\n' "bad.jobs:2: threads= must be an integer from 1 to 4096"
    bad_jobs bad2.jobs '\ncolor=red -- touch started\n' "bad2.jobs:2: unknown job option 'color'"
    bad_jobs dup.jobs 'name=a -- touch started\nname=a -- true\n' "dup.jobs:2: name 'a' is already used by job 1"
    bad_jobs q.jobs 'echo "unterminated\n' "q.jobs:1: unterminated double quote"
    bad_jobs c.jobs 'class=X -- touch started\n' "c.jobs:1: class= must be S (streaming), C (cache-sensitive) or N (no contention)"
    bad_jobs nocmd.jobs 'name=x --\n' "nocmd.jobs:1: no command after '--'"
}

@test "no jobs at all, empty job between :::" {
    refuse "no jobs" run --policy gang
    refuse "command line job 2 is empty" run -- true ::: ::: true
}

@test "more cpus or threads than managed" {
    refuse "--cpus 0-4095: cpus" run --cpus 0-4095 -- touch started
    refuse "--cpus 'x-y': expected a cpu list" run --cpus x-y -- touch started
    n=$(nproc)
    refuse "threads but only $n cpus are managed" run --threads $((n + 1)) -- touch started
}

@test "bad --control, --window, --output, --omp-env, --omp-shim, --policy-opt" {
    refuse "--window 'soon'" run --window soon -- touch started
    refuse "--output '/nonexistent/dir': expected prefix, inherit or a writable directory" run --output /nonexistent/dir -- touch started
    refuse "--omp-env 'maybe': expected on or off" run --omp-env maybe -- touch started
    refuse "--omp-shim 'maybe': expected on or off" run --omp-shim maybe -- touch started
    refuse "--policy-opt 'novalue': expected KEY=VALUE" run --policy-opt novalue -- touch started
    refuse "--policy-opt" run --policy gang --policy-opt nosuchkey=1 -- touch started
    run "$COSCHED" run --control nonsense -- touch started
    [ "$status" -eq 2 ]
    assert_contains "$output" "nonsense"
    [ ! -e started ]
}

@test "bad --topology" {
    refuse "not a valid hwloc synthetic description" run --topology synthetic:banana -- touch started
    refuse "cannot read 'nope.xml' as an hwloc XML topology" run --topology nope.xml -- touch started
}

# --cpus as hwloc-calc and likwid name cpu sets: TYPE:LOGICAL-INDEXES terms
# joined by '+' (launcher/core/topo.c cs_topo_cpus_parse); read back from what
# `cosched topology` says it manages.
@test "--cpus by topology: numa:1, core:0-1, llc:1+core:0, package:1, pu:all; bad ones name the term" {
    local topo="synthetic:pack:2 numa:1 l3:1 core:4 pu:2"
    managed() {
        run "$COSCHED" topology --topology "$topo" --cpus "$1"
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        assert_equal "$(echo "$output" | awk '/^managed cpus:/ { print $3 }')" "$2" "--cpus $1"
    }
    managed numa:1 8-15
    managed NUMANode:0 0-7
    managed core:0-1 0-3
    managed llc:1+core:0 0-1,8-15
    managed package:1 8-15
    managed pu:all 0-15
    managed l3:0+pu:15 0-7,15
    managed 2-5 2-5
    refuse "--cpus 'numa:2': synthetic:pack:2 numa:1 l3:1 core:4 pu:2 has 2 of them (numa:0-1)" \
        topology --topology "$topo" --cpus numa:2
    refuse "--cpus 'bogus:0': unknown object type 'bogus'" topology --topology "$topo" --cpus bogus:0
    refuse "--cpus 'core:': expected logical indexes such as 0-3 or all after 'core:'" \
        topology --topology "$topo" --cpus core:
    refuse "--cpus 'numa:1+8': '8': expected TYPE:INDEXES (terms are joined by '+')" \
        topology --topology "$topo" --cpus numa:1+8
    refuse "--cpus 'core:0+numa:9': 'numa:9': synthetic:pack:2 numa:1 l3:1 core:4 pu:2 has 2 of them (numa:0-1)" \
        topology --topology "$topo" --cpus core:0+numa:9
    # and cosched run: the jobs get the named cpus (this machine: every cpu is core:0-(n-1))
    n=$(nproc)
    run "$COSCHED" run --policy gang --cpus core:0 -- sh -c 'grep Cpus_allowed_list /proc/self/status'
    [ "$status" -eq 0 ]
    first=$("$COSCHED" topology | awk '/^core 0:/ { print $4 }' | tr -d ,)
    assert_contains "$output" "Cpus_allowed_list:	$first"
}

@test "topology: text and JSON from hwloc" {
    run "$COSCHED" topology
    [ "$status" -eq 0 ]
    assert_contains "$output" "core 0:"
    assert_contains "$output" "managed cpus:"
    run "$COSCHED" topology --json --topology "synthetic:pack:2 l3:2 core:2 pu:2"
    [ "$status" -eq 0 ]
    echo "$output" | python3 -c '
import json, sys
t = json.load(sys.stdin)
assert t["cores"] == 8, t["cores"]
assert t["pus"] == 16
assert len(t["llc_domains"]) == 4
assert t["llc_domains"][1]["cpus"] == "4-7", t["llc_domains"][1]
assert t["packages"] == 2
'
}

@test "policies lists the shipped policies, one line each" {
    run "$COSCHED" policies
    [ "$status" -eq 0 ]
    for p in linux gang tft; do
        echo "$output" | grep -E "^$p[[:space:]]"
    done
}

@test "units: the systemd unit's defaults and the site-defaults sample are durations the command line takes" {
    local unit=$COSCHED_SRCDIR/share/cosched-engine.service.in def=$COSCHED_SRCDIR/share/cosched-engine.default q
    q=$(sed -n 's/^Environment=.*COSCHED_QUANTUM=\([^ ]*\).*/\1/p' "$unit")
    [ -n "$q" ] || { echo "no COSCHED_QUANTUM default in $unit"; false; }
    grep -q -- '--quantum ${COSCHED_QUANTUM}' "$unit"
    run "$COSCHED" run --policy gang --quantum "$q" -- true
    [ "$status" -eq 0 ] || { echo "unit default --quantum $q: $output"; false; }
    q=$(sed -n 's/^#COSCHED_QUANTUM=//p' "$def")
    run "$COSCHED" run --policy gang --quantum "$q" -- true
    [ "$status" -eq 0 ] || { echo "sample COSCHED_QUANTUM=$q: $output"; false; }
    # the sample's COSCHED_OPTS duration (serve's option): a bad one is refused by name, this one is not
    g=$(sed -n 's/^#COSCHED_OPTS=--kill-grace //p' "$def")
    [ -n "$g" ]
    run "$COSCHED" serve --kill-grace 1sec --socket "$BATS_TEST_TMPDIR/no/such/dir/s"
    assert_contains "$output" "--kill-grace"
    run "$COSCHED" serve --kill-grace "$g" --socket "$BATS_TEST_TMPDIR/no/such/dir/s"
    [[ $output != *--kill-grace* ]] || { echo "sample --kill-grace $g refused: $output"; false; }
    assert_contains "$output" "--socket"   # refused for the socket, after the duration was taken
}
