#!/usr/bin/env bats
# 45-store: the profile store (launcher/core/store.c, cosched(1) PROFILE STORE) on
# real runs.  A test policy (written to a temporary --policy-path) runs the
# one job on every cpu, hands back a fixed characterization as plan()'s second
# value, and logs job.stored when the snapshot has it.  Counting uses the
# software events of profiles/test-software.txt (no PMU needed).

load helpers/common

setup() {
    requires cosched python3
    cd "$BATS_TEST_TMPDIR"
    shipped_data_only
    mkdir -p pol
    cat > pol/fixed.lua <<'LUA'
local logged = {}
return {
  api = 1, name = "fixed", description = "test: one fixed characterization",
  plan = function(snap)
    local jobs, res = {}, {}
    for _, j in ipairs(snap.jobs) do
      jobs[#jobs + 1] = { id = j.id, cpus = snap.cpus }
      local s = j.stored
      if s and not logged[j.id] then
        logged[j.id] = true
        cosched.log("info", ("stored: class=%s ipc_standalone=%s fp=%s bw.llc=%s gang_only=%s age=%s")
          :format(s.class, s.ipc_standalone, s.fp, s.bw.llc, tostring(s.gang_only), s.age))
      end
      if snap.epoch == 2 then
        res[#res + 1] = { id = j.id, class = "C", ipc_standalone = 1.5, ipc_folded = 1.0, fp = 1 / 3,
                          mpki = 2.5, bw = { l1 = 10, l2 = 5, llc = 1.25 }, gang_only = true,
                          cores_standalone = 2, cores_folded = 1 }
      end
    end
    return { { jobs = jobs, shared = true } }, res
  end,
}
LUA
}

teardown() {
    cleanup_cosched
}

# run_fixed [OPTIONS]: one short spin under the fixed policy, store in ./st
run_fixed() {
    run "$COSCHED" run --policy-path pol --policy fixed --store st --counters perf --profile test-software \
        --quantum 50ms "$@" -- "$PROGS/spin" -t 1 -c 0.4 -x 0
}

# age_entry FILE SECONDS: set the entry's timestamp SECONDS into the past
age_entry() {
    python3 - "$1" "$2" <<'PY'
import json, sys, time
e = json.load(open(sys.argv[1])); e["created"] = int(time.time()) - int(sys.argv[2])
json.dump(e, open(sys.argv[1], "w"))
PY
}

entry() {
    local f
    f=$(ls st/*.json 2>/dev/null)
    [ "$(echo "$f" | wc -w)" -eq 1 ] || { echo "want one entry in st, got: $(ls -a st 2>&1)" >&2; return 1; }
    echo "$f"
}

@test "a result handed back by plan() is stored with its key and values" {
    run_fixed
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    f=$(entry)
    python3 - "$f" "$(realpath "$PROGS/spin")" <<'PY'
import json, sys, time
e = json.load(open(sys.argv[1]))
k = e["key"]
def want(got, exp, what):
    assert got == exp, "%s: got %r, want %r" % (what, got, exp)
want(e["format"], "cosched-profile", "format"); want(e["version"], 1, "version")
want(k["exe"], sys.argv[2], "exe")
assert k["exe_id"].startswith(("build-id:", "fnv1a64:")), k["exe_id"]
want(k["args"], ["-t", "1", "-c", "0.4", "-x", "0"], "args")
assert all(k["cpu"][f] for f in ("vendor", "family", "model", "name")), k["cpu"]
want(e["class"], "C", "class"); want(e["ipc_standalone"], 1.5, "ipc_standalone")
want(e["fp"], 1 / 3, "fp"); want(e["bw_llc"], 1.25, "bw_llc"); want(e["gang_only"], True, "gang_only")
want(e["cores_standalone"], 2, "cores_standalone")
assert abs(e["created"] - time.time()) < 60, e["created"]
assert e["cosched"], e
PY
    # the build id, when the program has one, is the one readelf sees
    if command -v readelf >/dev/null && readelf -n "$PROGS/spin" | grep -q 'Build ID'; then
        id=$(readelf -n "$PROGS/spin" | awk '/Build ID/ { print $3 }')
        assert_contains "$(cat "$f")" "\"exe_id\": \"build-id:$id\""
    fi
}

@test "the next run sees job.stored; --reprofile hides it and overwrites the entry" {
    run_fixed
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ $output != *"stored: class="* ]] || { echo "job.stored before anything was stored: $output"; false; }
    f=$(entry)
    # make the entry distinguishable: an older timestamp, another class
    python3 - "$f" <<'PY'
import json, sys
e = json.load(open(sys.argv[1])); e["created"] -= 100; e["class"] = "S"
json.dump(e, open(sys.argv[1], "w"))
PY
    run_fixed
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    assert_contains "$output" "policy fixed: stored: class=S ipc_standalone=1.5 fp=0.33333"
    assert_contains "$output" "bw.llc=1.25 gang_only=true age=10"
    run_fixed --reprofile
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ $output != *"stored: class="* ]] || { echo "--reprofile still shows job.stored: $output"; false; }
    run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["class"])' "$f"
    assert_equal "$output" "C" "class after --reprofile overwrote the entry"
}

@test "--store none stores nothing and shows nothing" {
    run_fixed --store none
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ ! -e st ] || { echo "st exists: $(ls -a st)"; false; }
}

@test "the default store is ~/.cache/cosched/profiles, or \$XDG_CACHE_HOME/cosched/profiles" {
    run "$COSCHED" run --policy-path pol --policy fixed --counters perf --profile test-software \
        --quantum 50ms -- "$PROGS/spin" -c 0.3
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ "$(ls "$HOME"/.cache/cosched/profiles/*.json | wc -l)" -eq 1 ]
    XDG_CACHE_HOME=$BATS_TEST_TMPDIR/xdg run "$COSCHED" run --policy-path pol --policy fixed --counters perf \
        --profile test-software --quantum 50ms -- "$PROGS/spin" -c 0.3
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ "$(ls "$BATS_TEST_TMPDIR"/xdg/cosched/profiles/*.json | wc -l)" -eq 1 ]
}

@test "a corrupt or truncated entry: one warning naming the file, ignored, then replaced" {
    run_fixed
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    f=$(entry)
    head -c 100 "$f" > trunc && cat trunc > "$f"
    run_fixed
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # FILE:LINE:COL of the end of the 100 bytes kept (jansson's position), then what
    want=$(python3 -c 'import sys; t = open(sys.argv[1]).read(); print("%d:%d" % (t.count("\n") + 1, len(t) - t.rfind("\n") - 1))' trunc)
    assert_contains "$output" "warning: profile store: $f:$want: not valid JSON: "
    assert_contains "$output" "(truncated?); entry ignored"
    [ "$(echo "$output" | grep -c 'profile store:.*entry ignored')" -eq 1 ] || { echo "$output"; false; }
    [[ $output != *"stored: class="* ]] || { echo "$output"; false; }
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f"     # replaced by a valid one
    # a wrong type is named too
    python3 - "$f" <<'PY'
import json, sys
e = json.load(open(sys.argv[1])); e["fp"] = "high"; json.dump(e, open(sys.argv[1], "w"))
PY
    run_fixed
    assert_contains "$output" "warning: profile store: $f: field 'fp' must be a number or null; entry ignored"
    # a creation time that is no Unix time (would never expire; make fuzz found 1.76e50)
    python3 - "$f" <<'PY'
import json, sys
e = json.load(open(sys.argv[1])); e["created"] = 1.76e50; json.dump(e, open(sys.argv[1], "w"))
PY
    run_fixed
    assert_contains "$output" "warning: profile store: $f: field 'created' (Unix time) must be a number from 0 to 1e11; entry ignored"
}

@test "entries expire after --store-ttl" {
    run_fixed
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    f=$(entry)
    # (every run of the policy stores a fresh result: age the entry before each)
    age_entry "$f" 7200
    run_fixed --store-ttl 3h
    assert_contains "$output" "policy fixed: stored: class=C"
    local t0 age
    t0=$(date +%s)
    age_entry "$f" 7200
    run_fixed --store-ttl 1h
    # 7200 s, and a second more for each the clock ticked between age_entry and the check
    [[ $output =~ "profile store: $f: expired ("([0-9]+)" s old, --store-ttl 3600 s)" ]] &&
        age=${BASH_REMATCH[1]} && [ "$age" -ge 7200 ] && [ "$age" -le $((7200 + $(date +%s) - t0)) ] ||
        { echo "want: profile store: $f: expired (7200 s old, --store-ttl 3600 s)"; echo "got:  $output"; false; }
    [[ $output != *"stored: class="* ]] || { echo "$output"; false; }
    # a fresh entry ages past 1 s (wait for the clock, not a fixed sleep)
    run_fixed --reprofile
    created=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["created"]))' "$f")
    wait_for 5 "[ \$(date +%s) -ge $((created + 2)) ]"
    run_fixed --store-ttl 1s
    assert_contains "$output" "expired ("
    [[ $output != *"stored: class="* ]] || { echo "$output"; false; }
}

@test "--store-ttl takes days and refuses nonsense" {
    run "$COSCHED" run --store-ttl 2d --policy linux --counters none --quantum 50ms -- true
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    run "$COSCHED" run --store-ttl soon -- true
    [ "$status" -eq 2 ]
    assert_contains "$output" "--store-ttl 'soon': expected a duration"
}

@test "two concurrent runs writing the same key leave one valid entry and no temporary file" {
    for i in 1 2 3; do
        "$COSCHED" run --policy-path pol --policy fixed --store st --counters perf --profile test-software \
            --quantum 50ms --reprofile -- "$PROGS/spin" -t 1 -c 0.4 -x 0 2> a.err &
        a=$!
        "$COSCHED" run --policy-path pol --policy fixed --store st --counters perf --profile test-software \
            --quantum 50ms --reprofile -- "$PROGS/spin" -t 1 -c 0.4 -x 0 2> b.err &
        b=$!
        wait $a || { cat a.err; false; }
        wait $b || { cat b.err; false; }
        grep -q "stored in" a.err && grep -q "stored in" b.err || { cat a.err b.err; false; }
        f=$(entry)
        python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["class"] == "C"' "$f"
        [ -z "$(ls -A st | grep -v '\.json$')" ] || { echo "left in st: $(ls -A st)"; false; }
    done
}

@test "plan()'s second value is checked like the plan" {
    cat > pol/badres.lua <<'LUA'
return { api = 1, name = "badres",
  plan = function(snap)
    local id = snap.jobs[1] and snap.jobs[1].id
    return { { jobs = { { id = id, cpus = snap.cpus } } } }, { { id = id, class = "Q" } }
  end }
LUA
    run "$COSCHED" run --policy-path pol --policy badres --store st --counters none --quantum 50ms \
        -- "$PROGS/spin" -c 0.2
    assert_contains "$output" "characterized[1] (job 1): class 'Q' is not \"S\", \"C\", \"N\" or \"unknown\""
    [ ! -e st ] || [ -z "$(ls -A st)" ]
}
