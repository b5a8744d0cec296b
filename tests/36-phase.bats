#!/usr/bin/env bats
# 36-phase: a replayed counter trace drives the characterization module
# (cosched.characterize) through the real engine, on a real job: the job is
# classified from the replayed counts, and a phase change in the trace
# (IPC down 40 % for good) triggers a re-characterization, while a 5 % wobble
# does not.  (The module compares a job's IPC per cycle of its threads, which
# other load on the machine does not change; it used to compare the job IPC,
# times the CPU the job got per wall second, and load beside the run - two
# make check runs at once - looked like a phase change.  The replayed
# bandwidths are fixed per step.  As root, cosched and its job still run at
# nice -20 here.)  The replay
# uses the software-event test profile's slots, so the numbers are made up;
# what is tested is the path counts -> metrics -> snapshot -> module -> plan.

load helpers/common
load helpers/jobs
load helpers/tmpdir

# replay file: job "spin", 60 steps of 0.2 s; IPC 1.0 up to step 14, then $1;
# streaming-like bandwidths (reuse ~1 at every level: class S)
make_trace() {
    python3 - "$1" > phase.rec <<'PY'
import json, sys
later = float(sys.argv[1])
print(json.dumps({"format": "cosched-counters", "version": 1, "profile": "test-software",
                  "slots": ["SW0", "SW1", "SW2", "SW3", "SW4", "SW5", "SW6"]}, separators=(",", ":")))
for k in range(60):
    ipc = 1.0 if k < 15 else later
    print(json.dumps({"job": "spin", "step": k, "seq": k, "flags": 1, "seconds": 0.2,
                      "counts": [ipc * 1e8, 1e8, 3.2e7, 3.2e7, 3.2e7, 10, 0]}, separators=(",", ":")))
PY
}

run_phase() {
    local nice=()
    [ "$(id -u)" -ne 0 ] || nice=(nice -n -20)
    run "${nice[@]}" "$COSCHED" run --policy-path "$COSCHED_SRCDIR/tests/policies" --policy phasepol --quantum 200ms \
        --counters replay:phase.rec --profile test-software -- "$PROGS/spin" -t 2 -w 5
    echo "$output" | grep -E 'epoch|error|warning'
    [ "$status" -eq 0 ]
}

@test "replayed counts classify the job (S) after its standalone and folded quanta" {
    requires multicore
    make_trace 1.0
    run_phase
    assert_contains "$output" "epoch 4 job 1 class S ready true characterizing false rechar 0"
}

@test "a phase change in the replayed trace triggers re-characterization" {
    requires multicore
    make_trace 0.6
    run_phase
    # after the change (replayed step 15, about epoch 17) it is characterized again
    echo "$output" | awk '/epoch [0-9]+ job 1/ { e = $5 + 0; if (e >= 16 && / characterizing true rechar [1-9]/) found = 1 }
                          END { exit !found }'

}

@test "a 5 % wobble is not a phase change" {
    requires multicore
    make_trace 0.95
    run_phase
    if echo "$output" | grep -q "rechar 1"; then false; fi
    assert_contains "$output" "epoch 20 job 1 class S ready true"
}
