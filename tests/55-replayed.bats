#!/usr/bin/env bats
# 55-replayed: the class-aware policies on real processes with replayed
# counters.  Three spin jobs named s, c and n get counts (software-event test
# profile slots) that classify them S, C and N; every policy must run them
# without fallback, and the LCA family (flca with pairing=lca) must never run
# the S job beside the C job (paper 001 Sec. 4.2: "never an S job beside a C
# job under one LLC").

load helpers/common
load helpers/jobs

setup() {
    cd "$BATS_TEST_TMPDIR"
    python3 - > rec.jsonl <<'PY'
import json
slots = ["SW0", "SW1", "SW2", "SW3", "SW4", "SW5", "SW6"]
print(json.dumps({"format": "cosched-counters", "version": 1, "profile": "test-software", "slots": slots},
                 separators=(",", ":")))
# bw = count * 64 B / 0.1 s: S streams through every level, C reuses the LLC, N stays in L1
counts = {"s": [1e8, 1e8, 1.6e7, 1.6e7, 1.6e7, 10, 0],
          "c": [1e8, 1e8, 1.6e7, 1.6e7, 1.6e6, 10, 0],
          "n": [1e8, 1e8, 1e4, 1e4, 1e4, 10, 0]}
for k in range(400):
    for name, c in counts.items():
        print(json.dumps({"job": name, "step": k, "seq": k, "flags": 1, "seconds": 0.1, "counts": c},
                         separators=(",", ":")))
PY
    cat > jobs <<JOBS
name=s -- $PROGS/spin -t 2 -w 4
name=c -- $PROGS/spin -t 2 -w 4
name=n -- $PROGS/spin -t 2 -w 4
JOBS
}

teardown() {
    cleanup_cosched
}

run_replayed() {
    local opts=() o
    for o in ${3:-}; do opts+=(--policy-opt "$o"); done
    run "$COSCHED" run --policy "$1" "${opts[@]}" --quantum 100ms --counters replay:rec.jsonl --profile test-software \
        --store none --trace t.jsonl --jobs jobs
    echo "$output" | grep -vE '^\[' | tail -8
    [ "$status" -eq 0 ]
    python3 - t.jsonl "$2" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l]
assert steps, "no steps"
assert not any(s["fallback"] for s in steps), "fallback plan used"
ran = {j["name"] for s in steps for j in s["jobs"] if j["state"] == "run"}
assert ran == {"s", "c", "n"}, "not every job ran: %s" % ran
if sys.argv[2] == "lca":
    bad = [s["seq"] for s in steps
           if {"s", "c"} <= {j["name"] for j in s["jobs"] if j["state"] == "run"}]
    assert not bad, "S and C ran together in steps %s" % bad[:10]
counted = sum(1 for s in steps for j in s["jobs"] if j.get("counts_flags"))
assert counted > 0, "no step was measured"
print("%d steps, %d measured job-steps" % (len(steps), counted))
PY
}

@test "replayed counters: lca never runs S beside C" { requires multicore; run_replayed lca lca; }
# paper 001's F-LCA; flca's defaults pair by measured speed (cosched-policy(7)) and may put S beside C
@test "replayed counters: flca with LCA's pairs never runs S beside C" {
    requires multicore
    run_replayed flca lca "ageing=fop select=oldest pairing=lca"
}
@test "replayed counters: flca (its defaults) runs every job" { requires multicore; run_replayed flca any; }
@test "replayed counters: fop, lbb, llcmrb, flbb, fllcmrb run every job" {
    requires multicore
    for p in fop lbb llcmrb flbb fllcmrb; do run_replayed "$p" any; done
}
@test "replayed counters: pmugroup, cachefair, dinuma, dip, maxlocal, nmass, tft, gang run every job" {
    requires multicore
    for p in pmugroup cachefair dinuma dip maxlocal nmass tft gang; do run_replayed "$p" any; done
}
