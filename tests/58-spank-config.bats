#!/usr/bin/env bats
# 58-spank-config: the SPANK plugin's configuration and --cosched parser
# (plugin/spank_conf.c) without Slurm, through tests/progs/spank_conf.  What Slurm
# does with them is in 60-slurm-plugin.

load helpers/common

setup() {
    SC=$COSCHED_BUILDDIR/tests/progs/spank_conf
    [ -x "$SC" ] || { echo "$SC is not built"; return 1; }
    PD=policydir=$COSCHED_SRCDIR/lua/policies
}

# bad WANT ARGS...: spank_conf ARGS fails with exit 1 and one line "error: ...WANT..."
bad() {
    local want=$1
    shift
    run "$SC" "$@"
    echo "spank_conf $* -> status $status, output: $output"
    [ "$status" -eq 1 ]
    assert_equal "${#lines[@]}" 1 "lines of the message"
    assert_contains "$output" "error: "
    assert_contains "$output" "$want"
}

@test "defaults: no policy, quantum 1000 ms, every installed policy, opt-out allowed, no enforce, on-demand engine" {
    run "$SC" conf "$PD"
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "default=none"
    assert_contains "$output" "quantum_ms=1000"
    assert_contains "$output" "allowed=all"
    assert_contains "$output" "optout=1"
    assert_contains "$output" "enforce=0"
    assert_contains "$output" "socket=/run/cosched/engine.sock"
    assert_contains "$output" "start=ondemand"
    assert_contains "$output" "idle_exit_ms=300000"
    assert_contains "$output" "timeout_ms=2000"
    assert_contains "$output" "omp_shim=/"
    assert_contains "$output" "/libcosched-omp.so"
    # the installed set is the policy directory
    for p in "$COSCHED_SRCDIR"/lua/policies/*.lua; do
        assert_contains "$output" "$(basename "$p" .lua)"
    done
}

@test "every key parses and the last one given wins" {
    run "$SC" conf "$PD" default=gang quantum_ms=250 allowed=gang,tft,flca optout=no enforce=yes \
        socket=/tmp/x.sock start=none cosched=/opt/bin/cosched idle_exit=0 timeout_ms=500 quantum_ms=300 \
        omp_shim=/opt/lib/shim.so
    echo "$output"
    [ "$status" -eq 0 ]
    for kv in default=gang quantum_ms=300 "allowed=gang, tft, flca" optout=0 enforce=1 socket=/tmp/x.sock \
        start=none cosched=/opt/bin/cosched idle_exit_ms=0 timeout_ms=500 omp_shim=/opt/lib/shim.so; do
        assert_contains "$output" "$kv"
    done
    run "$SC" conf "$PD" omp_shim=none
    assert_contains "$output" "omp_shim=none"
}

@test "durations: quantum, idle_exit, timeout take units; a plain number is seconds, milliseconds for the old *_ms keys" {
    check() {  # check ARG WANT: plugstack ARG gives the line WANT
        run "$SC" conf "$PD" "$1"
        [ "$status" -eq 0 ] || { echo "$1: $output"; return 1; }
        echo "$output" | grep -qx "$2" || { echo "$1: want $2 in:"; echo "$output"; return 1; }
    }
    check quantum=500ms quantum_ms=500
    check quantum=2 quantum_ms=2000
    check quantum=1.5s quantum_ms=1500
    check quantum=1m quantum_ms=60000
    check quantum_ms=250 quantum_ms=250
    check quantum_ms=2s quantum_ms=2000
    check idle_exit=300 idle_exit_ms=300000
    check idle_exit=5m idle_exit_ms=300000
    check idle_exit=1.5s idle_exit_ms=1500
    check idle_exit=0 idle_exit_ms=0
    check idle_exit=1d idle_exit_ms=86400000
    check timeout=1.5s timeout_ms=1500
    check timeout=2 timeout_ms=2000
    check timeout_ms=800 timeout_ms=800
    check timeout_ms=0.5s timeout_ms=500
    # the last of a key and its old name wins
    run "$SC" conf "$PD" quantum=2s quantum_ms=300
    assert_contains "$output" "quantum_ms=300"
    bad "key 'quantum': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is seconds), got '5ms'" conf "$PD" quantum=5ms
    bad "key 'quantum': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is seconds), got '61'" conf "$PD" quantum=61
    bad "key 'quantum': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is seconds), got '1 s'" conf "$PD" "quantum=1 s"
    bad "key 'quantum': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is seconds), got '1sec'" conf "$PD" quantum=1sec
    bad "key 'idle_exit': expected a duration from 0ms to 1d (e.g. 500ms, 2s, 5m; a plain number is seconds), got '2d'" conf "$PD" idle_exit=2d
    bad "key 'timeout': expected a duration from 100ms to 3s (e.g. 500ms, 2s, 5m; a plain number is seconds), got '10s'" conf "$PD" timeout=10s
    # what keys= lists for the site
    run "$SC" keys
    assert_contains "$output" "quantum=1s  the engine's time quantum, 10ms to 60s (plain number: seconds)"
    assert_contains "$output" "quantum_ms=1000  old name of quantum (plain number: milliseconds)"
}

@test "plugstack.conf: an unknown key or a bad value is an error naming the key and what was expected" {
    bad "unknown key 'bogus' (known: default, quantum, allowed" conf "$PD" bogus=1
    bad "key 'quantum_ms': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is milliseconds), got 'abc'" conf "$PD" quantum_ms=abc
    bad "key 'quantum_ms': expected a duration from 10ms to 60s (e.g. 500ms, 2s, 5m; a plain number is milliseconds), got '5'" conf "$PD" quantum_ms=5
    bad "key 'optout': expected yes or no, got 'maybe'" conf "$PD" optout=maybe
    bad "key 'start': expected ondemand, systemd or none, got 'cron'" conf "$PD" start=cron
    bad "key 'socket': expected an absolute path" conf "$PD" socket=relative.sock
    bad "key 'idle_exit': expected a duration from 0ms to 1d (e.g. 500ms, 2s, 5m; a plain number is seconds), got '-1'" conf "$PD" idle_exit=-1
    bad "key 'timeout_ms': expected a duration from 100ms to 3s (e.g. 500ms, 2s, 5m; a plain number is milliseconds), got '10000'" conf "$PD" timeout_ms=10000
    bad "key 'quantum_ms' without a value" conf "$PD" quantum_ms
    bad "key 'allowed': empty policy name after the last ','" conf "$PD" allowed=gang,
    bad "key 'default': expected a policy name or none, got 'G A'" conf "$PD" "default=G A"
    bad "key 'omp_shim': expected an absolute path shorter than 1024 bytes, got 'shim.so'" conf "$PD" omp_shim=shim.so
}

@test "plugstack.conf: policies must be installed and consistent" {
    bad "key 'default': no policy 'flcaa' in $COSCHED_SRCDIR/lua/policies (installed: cachefair" conf "$PD" default=flcaa
    bad "key 'allowed': no policy 'nope'" conf "$PD" allowed=gang,nope
    bad "key 'default': policy 'flca' is not in allowed (gang, tft)" conf "$PD" allowed=gang,tft default=flca
    bad "key 'enforce': enforce=yes needs a default policy (default=POLICY)" conf "$PD" enforce=yes
    # an unreadable policy directory: names are not checked (the engine has the last word)
    run "$SC" conf policydir=/nonexistent default=whatever
    [ "$status" -eq 0 ]
    assert_contains "$output" "default=whatever"
}

@test "--cosched values: policy, hints, help, off, the default policy" {
    run "$SC" req flca:priority=5,class=C "$PD"
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "policy=flca priority=5 class=C"
    assert_contains "$output" "runs=flca"
    run "$SC" req gang "$PD"
    assert_contains "$output" "runs=gang"
    run "$SC" req help "$PD"
    assert_contains "$output" "help=1"
    assert_contains "$output" "runs=none"
    run "$SC" req off "$PD"
    assert_contains "$output" "off=1"
    assert_contains "$output" "runs=none"
    run "$SC" req :class=S "$PD" default=tft
    assert_contains "$output" "class=S"
    assert_contains "$output" "runs=tft"
    run "$SC" req tft:priority=-1000 "$PD"
    assert_contains "$output" "priority=-1000"
    assert_contains "$output" "omp_shim=yes"
    run "$SC" req gang:omp_shim=no "$PD"
    assert_contains "$output" "omp_shim=no"
    assert_contains "$output" "runs=gang"
}

@test "--cosched: bad values name what was wrong and list the valid values" {
    bad "--cosched: unknown policy 'lcaa' (policies: cachefair, classify" req lcaa "$PD"
    bad "--cosched: policy 'flca' is not allowed on this cluster (policies: gang, tft)" req flca "$PD" allowed=gang,tft
    bad "--cosched: 'off' is not allowed on this cluster" req off "$PD" optout=no
    bad "--cosched: unknown key 'prio' (valid keys: priority=INT (-1000..1000), class=S|C|N, omp_shim=yes|no)" req gang:prio=1 "$PD"
    bad "--cosched: priority must be an integer between -1000 and 1000, got 'high'" req gang:priority=high "$PD"
    bad "--cosched: priority must be an integer between -1000 and 1000, got '1001'" req gang:priority=1001 "$PD"
    bad "--cosched: class must be S, C or N" req gang:class=X "$PD"
    bad "--cosched: omp_shim must be yes or no, got 'maybe'" req gang:omp_shim=maybe "$PD"
    bad "--cosched: quantum_ms is not a step option" req gang:quantum_ms=10 "$PD"
    bad "--cosched: 'class' is not key=value" req gang:class "$PD"
    bad "--cosched: nothing after ':'" req gang: "$PD"
    bad "--cosched: nothing after the last ','" req gang:class=S, "$PD"
    bad "--cosched: no policy named and this cluster has no default policy" req :class=S "$PD"
    bad "--cosched: expected POLICY[:key=value,...], help or off" req "" "$PD"
    bad "--cosched: 'off' takes no options" req off:class=S "$PD"
    bad "--cosched: 'G/x' is not a policy name" req G/x "$PD"
}

@test "steps that did not ask: co-scheduled only with enforce=yes, under the default policy" {
    run "$SC" decide "$PD" default=gang
    assert_equal "$output" "runs=none"
    run "$SC" decide "$PD" default=gang enforce=yes
    assert_equal "$output" "runs=gang"
}

@test "the configuration table and cosched-spank(8) list the same keys" {
    local man=$COSCHED_SRCDIR/share/man/cosched-spank.8 k
    [ -f "$man" ]
    run "$SC" keys
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -ge 10 ]
    for k in $(printf '%s\n' "${lines[@]}" | cut -d= -f1); do
        grep -qF "\\fB$k=" "$man" || { echo "key $k is not documented in $man"; return 1; }
    done
}
