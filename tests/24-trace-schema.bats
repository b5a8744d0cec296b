#!/usr/bin/env bats
# 24-trace-schema: every line of real traces - `cosched run` (several jobs, a
# window, names with '"', non-ASCII and a byte that is not UTF-8, counters
# recorded then replayed so that metrics, policy and characterized records
# appear), `cosched simulate --trace` and the node engine (`cosched serve
# --trace`, steps of the fake Slurm tree) - is valid against
# share/trace-schema.json, checked by python3-jsonschema (draft 2020-12,
# tests/helpers/trace_schema.py).  The schema is strict (no unknown record
# type, no unknown key): deliberately broken lines are refused, each named.
# cosched(1) TRACE and the schema name the same keys.

load helpers/common
load helpers/fakeslurm

SCHEMA=$COSCHED_SRCDIR/share/trace-schema.json
VALIDATE=$COSCHED_SRCDIR/tests/helpers/trace_schema.py

setup() {
    requires python3
    python3 -c 'import jsonschema' 2>/dev/null || skip "needs python3-jsonschema (share/setup.sh installs it)"
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    [ -z "${FAKE_ROOT:-}" ] || fake_teardown
    cleanup_cosched
}

# valid TRACE...: every line valid, printed summary in $output
valid() {
    run python3 "$VALIDATE" "$SCHEMA" "$@"
    echo "$output"
    [ "$status" -eq 0 ] || return 1
    [[ $output == "ok "* ]] || return 1
}

@test "the schema is a valid draft 2020-12 schema; broken lines are refused, each named with its line" {
    valid_step='{"type":"step","seq":0,"epoch":1,"start":0.1,"end":0.2,"planned":0.1,"switch_us":3.5,"fallback":false,"jobs":[{"id":1,"name":"a","state":"run","cpus":"0-1","cpu_s":0.1}]}'
    printf '%s\n' "$valid_step" > good.jsonl
    valid good.jsonl
    assert_contains "$output" "ok 1 lines (run 0, step 1, job 0, characterized 0)"
    # one broken line each: refused, the line and what is wrong named
    refused() {  # WANT LINE
        printf '%s\n%s\n' "$valid_step" "$2" > bad.jsonl
        run python3 "$VALIDATE" "$SCHEMA" bad.jsonl
        echo "$output"
        [ "$status" -eq 1 ] || { echo "accepted: $2"; return 1; }
        assert_contains "$output" "bad.jsonl:2: $1"
        [[ $output != *"bad.jsonl:1:"* ]] || { echo "line 1 (valid) was refused"; return 1; }
    }
    refused "'0.1' is not of type 'number'" "${valid_step/\"cpu_s\":0.1/\"cpu_s\":\"0.1\"}"
    refused "'seq' is a required property" "${valid_step/\"seq\":0,/}"
    refused "'sleeping' is not one of ['run', 'frozen', 'stuck']" "${valid_step/\"state\":\"run\"/\"state\":\"sleeping\"}"
    refused "'0-' does not match" "${valid_step/\"cpus\":\"0-1\"/\"cpus\":\"0-\"}"
    refused "'phase' is not one of ['run', 'step', 'job', 'characterized']" '{"type":"phase","time":1}'
    refused "Additional properties are not allowed ('colour' was unexpected)" \
        '{"type":"characterized","time":1,"id":1,"name":"x","class":"S","degraded":false,"count":1,"colour":"red"}'
    # (the wording of these two differs between jsonschema versions: the line and the place only)
    refused "" '{"type":"job","event":"end","time":1,"id":1,"name":"x","instance":1,"threads":1,"exit":0,"signal":9}'
    assert_contains "$output" "['exit', 'signal']"
    refused "" \
        '{"type":"job","event":"start","time":1,"id":1,"name":"x","instance":1,"threads":1,"exit":0}'
    assert_contains "$output" "does not allow 0"
    m='"cpu_s":0.1,"metrics":{"ipc":1}'
    refused "'counts_flags' is a dependency of 'metrics'" "${valid_step/\"cpu_s\":0.1/$m}"
    # the OpenMP page's reverse channel: both or neither, bounded
    printf '%s\n' "${valid_step/\"cpu_s\":0.1/\"cpu_s\":0.1,\"omp_team\":2,\"omp_regions\":1234}" > omp.jsonl
    valid omp.jsonl
    refused "'omp_regions' is a dependency of 'omp_team'" "${valid_step/\"cpu_s\":0.1/\"cpu_s\":0.1,\"omp_team\":2}"
    refused "70000 is greater than the maximum of 65536" "${valid_step/\"cpu_s\":0.1/\"cpu_s\":0.1,\"omp_team\":70000,\"omp_regions\":1}"
    refused "not JSON" '{"type":"step",'
    # idle while a job was frozen: both parts, seconds >= 0, nothing else
    local i1='"fallback":false,"idle_frozen":{"nobody":0.5,"held":0.0}' i2='"fallback":false,"idle_frozen":{"nobody":0.5}'
    local i3='"fallback":false,"idle_frozen":{"nobody":-0.5,"held":0}'
    printf '%s\n' "${valid_step/\"fallback\":false/$i1}" > idle.jsonl
    valid idle.jsonl
    refused "'held' is a required property" "${valid_step/\"fallback\":false/$i2}"
    refused "-0.5 is less than the minimum of 0" "${valid_step/\"fallback\":false/$i3}"
    # idle per cpu: [cpu, seconds] pairs
    printf '%s\n' "${valid_step/\"fallback\":false/\"fallback\":false,\"cpu_idle\":[[0,0.05],[1,0.1]]}" > ci.jsonl
    valid ci.jsonl
    refused "-1 is less than the minimum of 0" "${valid_step/\"fallback\":false/\"fallback\":false,\"cpu_idle\":[[-1,0.1]]}"
    refused "" "${valid_step/\"fallback\":false/\"fallback\":false,\"cpu_idle\":[[1]]}"
}

@test "cosched run: every line of a trace with names to escape, a window, replayed counters, policy info and characterizations is valid" {
    # job names: a quote and an e-acute (UTF-8), and one with a byte that is not UTF-8
    printf 'name='"'"'a"b\xc3\xa9'"'"' threads=1 -- %s/spin -c 0.5\nname=z\xff threads=1 -- %s/spin -c 0.3\nname=plain threads=1 -- %s/spin -c 0.3\n' \
        "$PROGS" "$PROGS" "$PROGS" > j.jobs
    run "$COSCHED" run --policy flca --quantum 100ms --window 2s --counters perf --profile test-software \
        --record-counters rec.jsonl --store store1 --jobs j.jobs
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    run "$COSCHED" run --policy flca --quantum 100ms --window 2s --counters replay:rec.jsonl --profile test-software \
        --store store2 --trace t.jsonl --jobs j.jobs
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    valid t.jsonl
    # the trace holds what the schema is there to check: every record type, metrics, policy info, exits
    python3 - t.jsonl <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
kinds = {r["type"] for r in recs}
assert kinds == {"run", "step", "job", "characterized"}, kinds
assert recs[0]["type"] == "run" and recs[0]["window"] == 2.0 and recs[0]["command"] == "run", recs[0]
sj = [j for r in recs if r["type"] == "step" for j in r["jobs"]]
assert any("metrics" in j and j["metrics"] for j in sj), "no metrics"
assert any("policy" in j for j in sj), "no policy info"
# every step of a real run says the cpus' idle time while a job was frozen (/proc/stat)
assert all("idle_frozen" in r for r in recs if r["type"] == "step"), "a step without idle_frozen"
names = {r["name"] for r in recs if r["type"] == "job"}
# the quote and the e-acute read back as written; the byte that is not UTF-8 became U+FFFD
assert names == {'a"b\u00e9', "z\ufffd", "plain"}, names
ends = [r for r in recs if r["type"] == "job" and r["event"] == "end"]
assert any("exit" in r for r in ends) and any("signal" in r for r in ends), ends   # done, and cut by the window
EOF
    # the file itself is UTF-8 (e-acute written as is, not escaped)
    grep -q $'a\\\\"b\xc3\xa9' t.jsonl || { grep -m1 '"name"' t.jsonl; false; }
}

@test "cosched simulate --trace: every line of each policy's trace is valid" {
    run "$COSCHED" simulate --node paper001 --apps table2 --mix stream,ep,jacobi --policy tft,flca --window 20 \
        --trace s.jsonl
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ -s s.jsonl.tft ] && [ -s s.jsonl.flca ] || { ls; false; }
    valid s.jsonl.tft s.jsonl.flca
    [ "$(head -1 s.jsonl.flca | python3 -c 'import json,sys; print(json.load(sys.stdin)["command"])')" = simulate ]
    grep -q '"type":"characterized"' s.jsonl.flca || { echo "no characterized record"; false; }
    ! grep '"type":"step"' s.jsonl.tft s.jsonl.flca | grep -v '"idle_frozen":{"nobody":' || { echo "a step without idle_frozen"; false; }
}

@test "cosched serve --trace: every line of the node engine's trace (steps of the fake Slurm tree) is valid" {
    requires root cosched cgroup2_freeze
    fake_setup
    fake_step 7 0; fake_step 8 0
    fake_task 7 0 0 a; fake_task 8 0 0 b
    serve_start --policy gang --quantum 100ms --trace serve.jsonl
    run cs_register 7 0 "$a"
    [[ $output == OK* ]] || { echo "$output"; false; }
    run cs_register 8 0 "$b"
    [[ $output == OK* ]] || { echo "$output"; false; }
    wait_for 10 "[ \$(grep -c '\"type\":\"step\"' serve.jsonl) -ge 5 ]"
    run cs_send "COSCHED/1 deregister job=7 step=0 pid=$a"
    wait_for 10 "grep -q '\"event\":\"end\"' serve.jsonl"
    kill -TERM "$ENGINE"
    wait_for 10 "! kill -0 $ENGINE 2>/dev/null"
    valid serve.jsonl
    [ "$(head -1 serve.jsonl | python3 -c 'import json,sys; print(json.load(sys.stdin)["command"])')" = serve ]
}

@test "cosched(1) TRACE and the schema name the same keys" {
    python3 - "$COSCHED_SRCDIR/share/man/cosched.1" "$SCHEMA" <<'EOF'
import json, re, sys
man = open(sys.argv[1]).read()
sec = man[man.index(".SH TRACE"):]
sec = sec[:sec.index("\n.SH ", 1)].replace("\\-", "-")
assert "trace-schema.json" in sec, "cosched(1) TRACE does not point to the schema"
in_man = set(re.findall(r'"([a-z_]+)":', sec))
s = json.load(open(sys.argv[2]))
in_schema = set()
for d in ("run", "step", "stepjob", "job", "characterized"):
    in_schema |= set(s["$defs"][d]["properties"])
in_schema |= set(s["$defs"]["step"]["properties"]["idle_frozen"]["properties"])
# examples of the free-form objects (metrics, policy) the man page shows
examples = {"ipc", "class", "age", "selected", "characterizing"}
assert in_man - examples <= in_schema, "in cosched(1) only: %s" % sorted(in_man - examples - in_schema)
assert in_schema <= in_man, "in the schema only: %s" % sorted(in_schema - in_man)
EOF
}
