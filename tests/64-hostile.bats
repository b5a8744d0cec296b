#!/usr/bin/env bats
# 64-hostile: what an ordinary user can do to the root engine, and what it
# must not achieve (issue 12; cosched-spank(8) SECURITY).  Slurm 22.05 makes
# a user the owner of their own step's cgroup directories, so below a step
# everything is the user's to shape.  Each test is an attack that worked
# before the engine was hardened - it fails without the fix - run for real:
# fake Slurm trees in the real cgroup v1 and v2 hierarchies
# (helpers/fakeslurm.bash), real processes, requests over the real socket,
# as root and as uid nobody.  Assertions read the kernel (cpuset.cpus,
# freezer.state, cgroup.events, /proc) and what a client receives.

load helpers/common
load helpers/fakeslurm
bats_require_minimum_version 1.5.0

setup() {
    fake_test_setup
    NOBODY=$(id -u nobody)
}

teardown() {
    [ -n "${WMEM_SAVED:-}" ] && sysctl -qw net.core.wmem_default="$WMEM_SAVED"
    fake_teardown
}

registered() {
    local out
    out=$(cs_register "$@") || { echo "register $1.$2 pid $3: no reply" >&2; return 1; }
    [[ $out =~ ^OK\ id=([0-9]+) ]] || { echo "register $1.$2 pid $3: got: $out" >&2; return 1; }
}

# chain DIR N: as nobody, N nested cgroups d/d/d/... below DIR (relative
# mkdir: the path outgrows PATH_MAX)
chain() {
    runuser -u nobody -- "$SYS_PYTHON" -c '
import os, sys
os.chdir(sys.argv[1])
for _ in range(int(sys.argv[2])):
    os.mkdir("d")
    os.chdir("d")
' "$1" "$2"
}

# ------------------------------------------------------------------ the cgroup tree

@test "v1: a 2,100-level chain of cgroups below one's own step: no recursion, no crash; that step keeps Slurm's cores, the other is moved and given back" {
    requires cgroup1 multicore
    fake_v1_step 7 0 "$NOBODY"
    fake_v1_task 7 0 0 a
    fake_v1_step 8 0 0
    fake_v1_task 8 0 0 b
    chain "$(v1_dir cpuset 7 0)" 2100
    serve_start --policy tft --quantum 200ms
    registered 7 0 "$a" uid="$NOBODY"
    registered 8 0 "$b"
    # the victim is folded to part of the node at some point, the attacker never is
    wait_for 20 "[ \"\$(cat '$(v1_dir cpuset 8 0)/cpuset.cpus')\" != '$ALL' ]"
    for _ in 1 2 3 4 5; do
        sleep 0.3
        pid_alive "$ENGINE" || { cat engine.log >&2; false; }
        assert_equal "$(cat "$(v1_dir cpuset 7 0)/cpuset.cpus")" "$ALL" "cpuset.cpus of the attacker's step"
    done
    grep -q "step 7.0 has more than 256 cgroups or 3 levels below .* its cores are no longer moved" engine.log ||
        { cat engine.log >&2; false; }
    # the engine dies: its guardian gives the victim its cores back, thawed
    kill -KILL "$ENGINE"
    wait_for 10 "[ \"\$(cat '$(v1_dir cpuset 8 0)/cpuset.cpus')\" = '$ALL' ]"
    wait_for 5 "grep -qx THAWED '$(v1_dir freezer 8 0)/freezer.state'"
    wait_for 5 "grep -qx THAWED '$(v1_dir freezer 7 0)/freezer.state'"
}

@test "v1: engine and guardian both killed: the next engine gives a moved step its cores back, not only a thaw" {
    requires cgroup1 multicore
    fake_v1_step 7 0 0
    fake_v1_task 7 0 0 a
    fake_v1_step 8 0 0
    fake_v1_task 8 0 0 b
    serve_start --policy tft --quantum 200ms
    registered 7 0 "$a"
    registered 8 0 "$b"
    wait_for 20 "[ \"\$(cat '$(v1_dir cpuset 8 0)/cpuset.cpus')\" != '$ALL' ]"
    # the engine and its guardian (a fork of it: the same command line, with our socket)
    local both
    both=$(pgrep -f -- "serve --socket $SOCK")
    [ "$(echo "$both" | wc -l)" -eq 2 ] || { echo "engine and guardian: '$both'" >&2; false; }
    kill -KILL $both
    wait_for 5 _cs_gone "$ENGINE"
    [ -n "$(ls "$SOCK.held")" ] || { echo "nothing kept in $SOCK.held" >&2; false; }
    cpus_before=$(cat "$(v1_dir cpuset 8 0)/cpuset.cpus")
    if [ "$cpus_before" = "$ALL" ]; then
        cpus_before=$(cat "$(v1_dir cpuset 7 0)/cpuset.cpus")
        [ "$cpus_before" != "$ALL" ] || skip "both steps were on all cores when killed (a switch in between)"
    fi
    serve_start --policy tft --quantum 200ms
    for s in 7 8; do
        assert_equal "$(cat "$(v1_dir cpuset $s 0)/cpuset.cpus")" "$ALL" "cpuset.cpus of $s.0 after the restart"
        assert_equal "$(cat "$(v1_dir freezer $s 0)/freezer.state")" THAWED "freezer of $s.0 after the restart"
    done
    grep -q "a previous engine held .* restoring it" engine.log || { cat engine.log >&2; false; }
    [ -z "$(ls "$SOCK.held")" ]
}

@test "v2: 4,000 sub-cgroups named task_* below one's own step: the engine looks at 256 at most" {
    requires multicore
    command -v strace >/dev/null || skip "needs strace"
    fake_step 7 0
    fake_task 7 0 0 a
    fake_step 8 0
    fake_task 8 0 0 b
    chown nobody "$(step_dir 7 0 user)"
    runuser -u nobody -- "$SYS_PYTHON" -c '
import os, sys
for i in range(4000):
    os.mkdir(os.path.join(sys.argv[1], "task_x%d" % i))
' "$(step_dir 7 0 user)"
    serve_start --policy gang --quantum 100ms
    registered 7 0 "$a" uid="$NOBODY"
    registered 8 0 "$b"
    timeout 3 strace -f -qq -e trace=openat,open -p "$ENGINE" -o strace.out || true
    n=$(grep -o 'task_x[0-9]*' strace.out | sort -u | wc -l)
    [ "$(grep -c 'freezer\|cgroup.freeze' strace.out)" -gt 0 ] || { head strace.out >&2; false; }
    [ "$n" -le 256 ] || { echo "the engine opened $n of the attacker's 4000 sub-cgroups" >&2; false; }
    pid_alive "$ENGINE"
}

# ------------------------------------------------------------------ whose step

@test "26.05 SLUID layout: only the step's own slurmstepd can register its task; a job_<other> directory is refused whoever asks" {
    fake_layout 26.05
    fake_step 7 0
    fake_task 7 0 0 a
    fake_step 8 0
    fake_task 8 0 0 b
    serve_start --policy gang
    # root, but not the step's slurmstepd: the job directory has no job id to check
    run cs_register 7 0 "$a"
    assert_contains "$output" "ERR pid $a is in /"
    assert_contains "$output" "whose job directory is not named job_7, and the slurmstepd that registered it"
    # step 8's slurmstepd claiming step 7's task, as 7.0 or as its own
    run cs_register_stepd 8 0 "$a" job=7
    assert_contains "$output" "whose job directory is not named job_7"
    run cs_register_stepd 8 0 "$a"
    assert_contains "$output" "whose job directory is not named job_8"
    run status_json
    assert_contains "$output" '"steps":[]'
    # the step's own slurmstepd
    run cs_register_stepd 7 0 "$a"
    [[ $output =~ ^OK\ id= ]] || { echo "$output" >&2; false; }
    # a named job directory is checked against the ids, whoever sends them
    fake_layout 23-25
    fake_step 9 0
    fake_task 9 0 0 c
    run cs_register_stepd 9 0 "$c" job=10
    assert_contains "$output" "/job_9/step_0, a step of job 9, not of job 10"
    [ "$(step_field 9.0 state)" = "" ]
}

# ------------------------------------------------------------------ kill signals

@test "a task that blocks SIGTERM and sends it to itself is still frozen in its turns" {
    fake_step 7 0
    fake_task 7 0 0 a "$SYS_PYTHON" -c '
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
os.kill(os.getpid(), signal.SIGTERM)
while True:
    pass
'
    fake_step 8 0
    fake_task 8 0 0 b
    wait_for 5 "grep -q '^ShdPnd:.*4000\$' /proc/$a/status"     # SIGTERM (15) pending
    serve_start --policy gang --quantum 100ms
    registered 7 0 "$a"
    registered 8 0 "$b"
    local f=0 n
    for ((n = 0; n < 100 && f < 3; n++)); do
        [ "$(step_frozen 7 0)" = 1 ] && f=$((f + 1))
        sleep 0.05
    done
    [ "$f" -ge 3 ] || { echo "7.0 frozen in $f of $n looks" >&2; cat engine.log >&2; false; }
    ! grep -q "step 7.0 is being killed" engine.log
}

@test "a kill signal pending for longer than --kill-grace is not Slurm's: the step is co-scheduled again" {
    fake_step 7 0
    fake_task 7 0 0 a "$SYS_PYTHON" -c '
import signal, time
signal.signal(signal.SIGTERM, lambda *a: None)
while True:
    time.sleep(0.01)
'
    fake_step 8 0
    fake_task 8 0 0 b
    serve_start --policy gang --quantum 100ms --kill-grace 1s
    registered 7 0 "$a"
    registered 8 0 "$b"
    # stopped with a handler: SIGTERM stays pending, unblocked - it looks like a kill in progress
    kill -STOP "$a"
    wait_for 5 "grep -q '^State:.*T' /proc/$a/status"
    kill -TERM "$a"
    wait_for 5 "grep -q '^ShdPnd:.*4000\$' /proc/$a/status"
    wait_for 10 "grep -q 'step 7.0 is being killed by Slurm' engine.log"
    wait_for 10 "grep -q 'step 7.0 has shown a pending kill signal for [0-9]* s, longer than Slurm takes' engine.log"
    wait_for 10 "[ \"\$(step_frozen 7 0)\" = 1 ]"
    kill -KILL "$a"
}

# ------------------------------------------------------------------ the socket

@test "70 idle connections of one user: that user is limited, root still registers and is answered" {
    fake_step 7 0
    fake_task 7 0 0 a
    serve_start --policy gang
    cs_send_as nobody '' --silent --many 70 --timeout 5 > flood.out &
    local fl=$!
    wait_for 5 "[ \$(ls /proc/$ENGINE/fd | wc -l) -gt 12 ]"
    sleep 0.3
    assert_equal "$(cs_send 'COSCHED/1 ping')" "OK version=1 pid=$ENGINE policy=gang"
    registered 7 0 "$a"
    wait "$fl" || true
    nrefused=$(grep -c "ERR you have too many connections to the engine open" flood.out)
    [ "$nrefused" -ge 62 ] || { echo "only $nrefused of 70 refused" >&2; cat flood.out >&2; false; }
    [ "$(grep -c "refused a connection from pid" engine.log)" -le 20 ] || { echo "refusals logged without limit" >&2; false; }
}

@test "clients that never read their replies do not stall the engine" {
    # a small socket buffer (the default is ~200 KiB) makes a status reply outgrow it
    WMEM_SAVED=$(sysctl -n net.core.wmem_default)
    sysctl -qw net.core.wmem_default=4608
    local j pids=()
    for j in $(seq 10 39); do
        fake_step "$j" 0
        fake_task "$j" 0 0 "t$j" sleep 1000
    done
    serve_start --policy gang --quantum 100ms
    for j in $(seq 10 39); do
        local v="t$j"
        registered "$j" 0 "${!v}"
    done
    [ "$(status_json | wc -c)" -gt 8000 ]
    # 30 clients ask for the status and never read it
    "$SYS_PYTHON" - "$SOCK" <<'PY' &
import socket, sys, time
cs = []
for _ in range(30):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"COSCHED/1 status format=json\n")
    cs.append(s)
time.sleep(8)
PY
    local cl=$!
    sleep 0.5
    local t0 t1
    t0=$(_cs_now_us)
    cs_send 'COSCHED/1 ping' --timeout 10 | grep -q '^OK '
    t1=$(_cs_now_us)
    kill "$cl" 2>/dev/null || true
    wait "$cl" 2>/dev/null || true
    # before: each of them held the loop for 0.5 s (15 s for 30); not a timing
    # of the engine, a bound an order of magnitude above any load
    [ $((t1 - t0)) -lt 3000000 ] || { echo "ping answered after $(((t1 - t0) / 1000)) ms" >&2; false; }
}

@test "a client talks only to a root engine: a user's listener on the socket path gets nothing" {
    local d
    d=$(mktemp -d /tmp/cs64.XXXXXX)
    chmod 777 "$d"
    runuser -u nobody -- "$SYS_PYTHON" - "$d/fake.sock" <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
s.listen(4)
s.settimeout(5)
try:
    c, _ = s.accept()
    open(sys.argv[1] + ".got", "w").write(c.recv(4096).decode())
    c.sendall(b"OK text\nfake\n")
except socket.timeout:
    pass
PY
    local fk=$!
    wait_for 5 test -S "$d/fake.sock"
    run "$COSCHED" status --socket "$d/fake.sock"
    kill "$fk" 2>/dev/null || true
    wait "$fk" 2>/dev/null || true
    [ "$status" -ne 0 ]
    [[ $output == *"runs as uid $NOBODY, not root: not talking to it"* ]] || { echo "$output" >&2; false; }
    [ ! -s "$d/fake.sock.got" ]
    rm -rf "$d"
}

# ------------------------------------------------------------------ policies

# bad_policy NAME BODY: a policy that does BODY in plan(), then what linux does
bad_policy() {
    mkdir -p pol
    cat > "pol/$1.lua" <<EOF
return { api = 1, name = "$1", description = "test: $1",
  plan = function(snap)
    $2
    local step = { jobs = {}, shared = true }
    for _, job in ipairs(snap.jobs) do step.jobs[#step.jobs + 1] = { id = job.id, cpus = snap.cpus } end
    return { step }
  end }
EOF
}

@test "C library loops in a policy are refused with a message; cosched run ends and its job ran" {
    bad_policy rep 'local x = string.rep("", math.maxinteger)'
    bad_policy move 'table.move({}, 1, math.maxinteger, 2, {})'
    bad_policy find 'string.find(string.rep("a", 40), "a-a-a-a-a-a-a-a-b")'
    bad_policy insert 'table.insert(setmetatable({}, {__len = function() return math.maxinteger - 1 end}), 1, "x")'
    bad_policy sort 'table.sort(setmetatable({}, {__len = function() return 2^30 end, __index = rawlen}))'
    bad_policy concat 'table.concat(setmetatable({}, {__index = rawlen}), "", 1, 2^40)'
    bad_policy cpulen 'do return {{ jobs = {{ id = snap.jobs[1].id, cpus = setmetatable({}, {__len = function() return 2^62 end, __index = rawlen}) }} }} end'
    bad_policy jobslen 'do return {{ jobs = setmetatable({}, {__len = function() return 2^32 end}) }} end'
    local p want
    for p in rep move find insert sort concat cpulen jobslen; do
        case $p in
        rep) want='' ;;
        move) want='table.move: 1 to 9223372036854775807 is more than 1048576 elements' ;;
        find) want="string.find: pattern 'a-a-a-a-a-a-a-a-b' on a 40-byte subject could take about" ;;
        insert) want="table.insert: the table's length is 9223372036854775806" ;;
        sort) want="table.sort: the table's length is 1073741824" ;;
        concat) want='table.concat: 1 to 1099511627776 is more than 1048576 elements' ;;
        cpulen) want='step 1: job 1: cpus is empty' ;;
        jobslen) want='step 1: no jobs, but 1 job is live' ;;
        esac
        run -0 timeout 30 "$COSCHED" run --policy-path "$PWD/pol" --policy "$p" --quantum 100ms -- sleep 0.3
        [[ -z $want || $output == *"$want"* ]] || { echo "policy $p: wanted '$want' in: $output" >&2; false; }
        [[ $output == *"exit 0"* ]] || { echo "policy $p: $output" >&2; false; }
    done
}

@test "SIGTERM while a policy loops: cosched run stops at once, its job thawed and terminated" {
    # a loop that stays in plan() long after the signal on any CPU: each turn is a few instructions
    # and a 64 KiB scan, so the instruction budget (which a bare 'while true do end' used up in
    # under 0.5 s on an EPYC 9005) is far away when the signal comes
    bad_policy spin 'local s = string.rep("a", 65536) while true do s:find("b", 1, true) end'
    "$COSCHED" run --policy-path "$PWD/pol" --policy spin --quantum 5s -- sleep 4242 2> run.err &
    local cs=$!
    wait_for 10 "grep -q 'policy spin' run.err"
    sleep 0.5
    kill -TERM "$cs"
    wait_for 5 _cs_gone "$cs" || { cat run.err >&2; false; }
    grep -q "plan() stopped: cosched received a signal to stop" run.err || { cat run.err >&2; false; }
    wait_for 5 "! pgrep -x -f 'sleep 4242' >/dev/null"
}
