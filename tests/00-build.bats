#!/usr/bin/env bats
# 00-build: the built programs exist and behave as the other tests assume:
# cosched reports its version, every workload refuses bad usage with exit 2 and
# a message naming the bad argument, spin's limits, exit code, files, late
# thread and children work, the demos and ompwork run and print their result.

load helpers/common
load helpers/tmpdir

# refuse WANT CMD...: CMD exits 2 and says WANT (and its usage) on stderr.
refuse() {
    local want=$1
    shift
    run "$@"
    echo "$* -> status $status, output: $output"
    [ "$status" -eq 2 ]
    assert_contains "$output" "$want"
    assert_contains "$output" "usage: $(basename "$1")"
}

# refuse1: refuse, and the message is a single line.
refuse1() {
    refuse "$@"
    assert_equal "$(echo "$output" | wc -l)" 1 "lines of the message of $2"
}

@test "cosched --version prints the configured version" {
    [ -x "$COSCHED" ] || { echo "$COSCHED is not built"; false; }
    version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$COSCHED_BUILDDIR/config.h")
    [ -n "$version" ]
    run "$COSCHED" --version
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "cosched $version"
}

@test "demo programs refuse bad arguments: exit 2, the argument named, the usage" {
    for p in stream matmul compute; do
        [ -x "$DEMO/$p" ] || { echo "$DEMO/$p is not built"; false; }
        refuse1 "unknown option '-Z'" "$DEMO/$p" -Z
        refuse1 "got 'many'" "$DEMO/$p" -n many
        refuse1 "got '0'" "$DEMO/$p" -n 0
        refuse1 "got '-1'" "$DEMO/$p" -s -1
        refuse1 "option needs a value: '-s'" "$DEMO/$p" -s
        refuse1 "-s and -n exclude each other" "$DEMO/$p" -s 1 -n 1
        refuse1 "unexpected argument 'extra'" "$DEMO/$p" -n 1 extra
    done
}

@test "test programs refuse bad arguments: exit 2, the argument named, the usage" {
    refuse "unknown option '-Z'" "$PROGS/spin" -Z
    refuse "-t wants an integer from 1 to 1024, got '0'" "$PROGS/spin" -t 0
    refuse "-c wants a number of seconds >= 0, got 'soon'" "$PROGS/spin" -c soon
    refuse "-x wants an integer from 0 to 255, got '256'" "$PROGS/spin" -x 256
    refuse "option '-p' needs a value" "$PROGS/spin" -p
    refuse "unexpected argument 'x'" "$PROGS/spin" x
    refuse "unknown option '-Z'" "$PROGS/ompwork" -Z
    refuse "-k wants barrier or triad, got 'lock'" "$PROGS/ompwork" -k lock
    refuse "-F wants a cpu list such as 0 or 0-1, got '1-0'" "$PROGS/ompwork" -F 1-0
}

@test "spin -c stops after that much CPU time, silently, exit 0; -x sets the code" {
    TIMEFORMAT='%R %U %S'
    { time "$PROGS/spin" -c 0.3 > out 2> err; } 2> times.txt
    read -r real user sys < times.txt
    echo "real $real user $user sys $sys"
    # used at least the CPU asked for, and stopped soon after
    awk -v u="$user" -v s="$sys" -v r="$real" 'BEGIN { exit !(u + s >= 0.29 && r < 10) }'
    [ ! -s out ]
    [ ! -s err ]
    run "$PROGS/spin" -c 0.2
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    run "$PROGS/spin" -c 0.05 -x 3
    [ "$status" -eq 3 ]
    run "$PROGS/spin" -t 3 -w 0.1 -x 7
    [ "$status" -eq 7 ]
}

@test "spin -t -p -T: the pid file, and the tid file listing every thread" {
    "$PROGS/spin" -t 3 -p s.pid -T s.tids &
    wait_for 5 test -s s.pid
    pid=$(cat s.pid)
    assert_equal "$pid" "$!" "pid in s.pid"
    assert_equal "$(sort -n s.tids | tr '\n' ' ')" "$(ls "/proc/$pid/task" | sort -n | tr '\n' ' ')" "threads of spin -t 3"
    [ "$(wc -l < s.tids)" -eq 3 ]
    # every thread spins
    wait_for 5 all_threads_state "$pid" R
}

@test "spin -L: the late thread appears in /proc/PID/task and in the -T file" {
    "$PROGS/spin" -t 2 -L 1 -p l.pid -T l.tids &
    wait_for 5 test -s l.pid
    pid=$(cat l.pid)
    first=$(cat l.tids)
    [ "$(echo "$first" | wc -l)" -eq 2 ]
    wait_for 5 '[ "$(wc -l < l.tids)" -eq 3 ]'
    assert_equal "$(sort -n l.tids | tr '\n' ' ')" "$(ls "/proc/$pid/task" | sort -n | tr '\n' ' ')" "threads after -L"
    late=$(grep -vxF "$first" l.tids)
    [ -d "/proc/$pid/task/$late" ]
}

@test "spin -f: children spin, the parent waits for them and exits with -x" {
    "$PROGS/spin" -f 2 -t 2 -p f.pid &
    wait_for 5 test -s f.pid
    pid=$(cat f.pid)
    kids=$(pgrep -P "$pid" | sort -n)
    echo "children: $kids"
    [ "$(echo "$kids" | wc -w)" -eq 2 ]
    for k in $kids; do
        assert_equal "$(cat "/proc/$k/comm")" spin "comm of child $k"
        [ "$(ls "/proc/$k/task" | wc -l)" -eq 2 ]
    done
    kill -KILL "$pid" $kids
    run "$PROGS/spin" -f 3 -c 0.1 -x 5
    [ "$status" -eq 5 ]
}

@test "spin -i ignores SIGTERM (children too); without -i SIGTERM kills" {
    "$PROGS/spin" -i -f 1 -p i.pid &
    wait_for 5 test -s i.pid
    pid=$(cat i.pid)
    for p in "$pid" $(pgrep -P "$pid"); do
        mask=$(awk '/^SigIgn:/ { print $2 }' "/proc/$p/status")
        echo "SigIgn of $p: $mask"
        [ $(((16#$mask >> 14) & 1)) -eq 1 ]  # SIGTERM is signal 15: bit 14
    done
    kill -TERM "$pid"
    "$PROGS/spin" -p t.pid &
    wait_for 5 test -s t.pid
    kill -TERM "$(cat t.pid)"
    st=0
    wait "$(cat t.pid)" || st=$?
    [ "$st" -eq 143 ]
    # the -i one is still there (it was signalled first)
    pid_alive "$pid"
}

@test "stream, matmul, compute: a tiny run prints one result line, exit 0" {
    run "$DEMO/stream" -n 2 -m 8
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ ^stream:\ 2\ iterations,\ [0-9]+\ threads?,\ [0-9.]+\ s,\ [0-9.]+\ GB/s,\ 24\ MiB,\ checksum\ [0-9.e+-]+$ ]]
    run "$DEMO/matmul" -n 1
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ ^matmul:\ 1\ iterations,\ [0-9]+\ threads?,\ [0-9.]+\ s,\ [0-9.]+\ GFLOP/s,\ checksum\ [0-9.e+-]+$ ]]
    run "$DEMO/compute" -n 3
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ ^compute:\ 3\ iterations,\ [0-9]+\ threads?,\ [0-9.]+\ s,\ [0-9.]+\ GFLOP/s,\ checksum\ [0-9.e+-]+$ ]]
    c3=$(echo "$output" | sed 's/.*checksum //')
    # -r: the same work as one parallel region (the same checksum), its team in the line
    run env OMP_NUM_THREADS=3 "$DEMO/compute" -n 3 -r
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ ^compute:\ 3\ iterations,\ [0-9]+\ threads?,\ 1\ region,\ [0-9.]+\ s,\ [0-9.]+\ GFLOP/s,\ checksum\ [0-9.e+-]+$ ]]
    [ "${output##*checksum }" = "$c3" ]
    run "$DEMO/stream" -r
    [ "$status" -eq 2 ]
    assert_contains "$output" "stream: unknown option '-r'"
    # -q: the same work, no output
    run "$DEMO/compute" -n 1 -q
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # -s: whole iterations until the time has passed
    run "$DEMO/compute" -s 0.2
    echo "$output"
    [ "$status" -eq 0 ]
    secs=$(echo "$output" | awk -F', ' '{ print $3 + 0 }')
    awk -v s="$secs" 'BEGIN { exit !(s >= 0.2 && s < 5) }'
}

@test "demo programs run as many threads as omp_get_max_threads() says" {
    requires openmp
    for p in stream matmul compute; do
        args="-n 1"
        [ "$p" = stream ] && args="-n 1 -m 8"
        OMP_NUM_THREADS=1 run "$DEMO/$p" $args
        assert_contains "$output" " 1 thread,"
        OMP_NUM_THREADS=3 run "$DEMO/$p" $args
        assert_contains "$output" " 3 threads,"
    done
}

@test "ompwork: barrier and triad print the elapsed seconds; -F folds a running team" {
    run "$PROGS/ompwork" -k barrier -n 2000
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ ^[0-9]+\.[0-9]{3}$ ]]
    run "$PROGS/ompwork" -k triad -n 2 -m 4
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output =~ ^[0-9]+\.[0-9]{3}$ ]]
    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive run "$PROGS/ompwork" -k barrier -n 2000 -F 0 -v
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "folded to cpus 0"
}

@test "demo.jobs names only the demo programs, with valid classes" {
    jobs=$COSCHED_SRCDIR/share/demo/demo.jobs
    n=0
    while read -r line; do
        line=${line%%#*}
        [ -n "${line// /}" ] || continue
        opts=${line%% -- *} cmd=${line#* -- }
        prog=${cmd%% *}
        echo "job: [$opts] $cmd"
        [[ $prog =~ ^(stream|matmul|compute)$ ]]
        [ -x "$DEMO/$prog" ]
        [[ " $opts " =~ \ class=[SCN]\  ]]
        n=$((n + 1))
    done < "$jobs"
    [ "$n" -eq 3 ]
}
