#!/usr/bin/env bats
# 57-omp-shim: libcosched-omp.so (launcher/omp/cosched-omp.c, issue 14) in
# real OpenMP programs whose results are checked: tests/progs/ompshim (C,
# gcc/libgomp, also the GOMP_1.0 entry points), ompshim_llvm (the same source,
# clang/libomp), ompshim_f (Fortran, gfortran/libgomp).  Each moves its own
# process, all threads, with `taskset -a -p` between phases (2 -> 1 -> 2 CPUs)
# and prints one line per region: its team size, a nested team, what
# omp_get_max_threads() said, and whether the result was right.  With the
# shim, an outermost region without num_threads gets min(ICV, CPUs); without
# it (or opted out) the team keeps the ICV.  Then cosched run's injection:
# the job environment (LD_PRELOAD, wait policy) for dynamic, script and
# static jobs and each opt-out, and OpenMP jobs that cosched itself folds
# (tft) or time-slices (gang).  Small: each program runs at most a few
# seconds of CPU.

load helpers/common
bats_require_minimum_version 1.5.0   # run --separate-stderr

setup() {
    cd "$BATS_TEST_TMPDIR"
    SHIM=$COSCHED_BUILDDIR/launcher/omp/libcosched-omp.so
    [ -f "$SHIM" ] || { echo "$SHIM is not built"; return 1; }
    C_PROG=$PROGS/ompshim
    LLVM_PROG=$PROGS/ompshim_llvm
    F_PROG=$PROGS/ompshim_f
    # the regions each program runs per phase
    C_REGIONS=22 LLVM_REGIONS=19 F_REGIONS=7
    unset COSCHED_OMP OMP_DYNAMIC OMP_PROC_BIND OMP_PLACES OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_AFFINITY
}

# first_cpus N: the first N CPUs this process may run on, comma-separated
first_cpus() {
    awk '/^Cpus_allowed_list:/ {
        n = split($2, part, ",")
        for (i = 1; i <= n; i++)
            if (split(part[i], r, "-") == 2) { for (c = r[1]; c <= r[2]; c++) print c } else print part[i]
    }' /proc/self/status | head -n "$1" | paste -sd, -
}

# check_teams MODE ICV PHASES REGIONS: $output (one line per region) is all
# "ok", has REGIONS lines in each of PHASES phases, and its team sizes follow
# MODE: "shim" = a num_threads(2) region has 2, every other team min(ICV,
# cpus); "fixed" = the region has 2 with the clause, ICV without.  A nested
# team always has 2 (its ICV: the program sets it); max= equals team=.
check_teams() {
    local mode=$1 icv=$2 phases=$3 regions=$4
    awk -v mode="$mode" -v icv="$icv" -v phases="$phases" -v regions="$regions" '
    {
        split("", f)
        for (i = 1; i <= NF; i++)
            if (split($i, kv, "=") == 2) f[kv[1]] = kv[2]
        if ($NF != "ok") { print "line " NR " is not ok: " $0; err = 1; next }
        cpus = f["cpus"] + 0
        if (f["region"] == "clause") want = 2
        else if (mode == "shim") want = (cpus < icv) ? cpus : icv
        else want = icv
        if (f["team"] + 0 != want) { print "line " NR ": team " f["team"] ", want " want " (" mode "): " $0; err = 1 }
        if (("inner" in f) && f["inner"] != 2) { print "line " NR ": nested team " f["inner"] ", want 2: " $0; err = 1 }
        if (("max" in f) && f["max"] != f["team"]) { print "line " NR ": omp_get_max_threads() " f["max"] " but team " f["team"] ": " $0; err = 1 }
        n[f["phase"]]++
    }
    END {
        for (p = 1; p <= phases; p++)
            if (n[p] != regions) { print "phase " p ": " n[p] + 0 " regions, want " regions; err = 1 }
        if (NR != phases * regions) { print NR " lines, want " phases * regions; err = 1 }
        exit err
    }' <<<"$output"
}

# run_prog PROG ARGS...: run with the shim preloaded unless NOSHIM=1; status 0
run_prog() {
    if [ "${NOSHIM:-0}" = 1 ]; then
        run --separate-stderr "$@"
    else
        run --separate-stderr env LD_PRELOAD="$SHIM${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
    fi
    echo "$* -> status $status"
    echo "$output"
    echo "stderr: $stderr"
    [ "$status" -eq 0 ]
}

requires_c()    { requires multicore openmp; [ -x "$C_PROG" ] || skip "needs $C_PROG (make check builds it)"; }
requires_llvm() { requires multicore; [ -x "$LLVM_PROG" ] || skip "needs $LLVM_PROG: clang with LLVM libomp (Debian: clang, libomp-14-dev; configure looks for them)"; }
requires_f()    { requires multicore; [ -x "$F_PROG" ] || skip "needs $F_PROG: gfortran with OpenMP (Debian: gfortran; configure looks for it)"; }

@test "the shim covers every GOMP_parallel* entry point of this libgomp, libomp's fork, and links with libc only" {
    run nm -D --defined-only "$SHIM"
    echo "$output"
    [ "$status" -eq 0 ]
    exports=$output
    for s in omp_get_max_threads omp_get_max_threads_ __kmpc_fork_call __kmpc_push_num_threads __kmpc_serialized_parallel; do
        assert_contains "$exports" " T $s"$'\n' "exports of $SHIM" || assert_contains "$exports" " T $s" "exports of $SHIM"
    done
    # every entry point that starts a team in the installed libgomp (not GOMP_parallel_end)
    gomp=$(ldconfig -p | awk '/libgomp\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$gomp" ] || gomp=$(ldconfig -p | awk '/libgomp\.so\.1/ {print $NF; exit}')
    [ -n "$gomp" ] || skip "no libgomp.so.1 in ldconfig -p"
    wanted=$(nm -D --defined-only "$gomp" | awk '$3 ~ /^GOMP_parallel/ {sub(/@.*/, "", $3); print $3}' | grep -v '^GOMP_parallel_end$' | sort -u)
    echo "team-starting entry points of $gomp: $wanted"
    [ "$(echo "$wanted" | wc -l)" -ge 10 ]
    for s in $wanted; do
        [[ $exports == *" T $s"* ]] || { echo "$SHIM does not define $s, which $gomp exports"; false; }
    done
    # only the entry points: no helper leaks into the program's namespace
    # (and the program's own affinity calls, which the shim must notice)
    others=$(awk '$2 == "T" && $3 !~ /^(GOMP_parallel|omp_get_max_threads|__kmpc_|sched_setaffinity$|pthread_setaffinity_np$)/ {print $3}' <<<"$exports")
    assert_equal "$others" "" "other exported functions"
    run ldd "$SHIM"
    echo "$output"
    [[ $output != *libgomp* && $output != *libomp* ]] || { echo "$SHIM must not link an OpenMP runtime"; false; }
}

@test "C, libgomp: team sizes follow the CPUs 2 -> 1 -> 2 in every kind of region, results right" {
    requires_c
    OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 2,1,2
    check_teams shim 2 3 "$C_REGIONS"
}

@test "C, libgomp, without the shim: teams keep 2 on 1 CPU (the control: taskset alone does not resize)" {
    requires_c
    NOSHIM=1 OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 2,1,2
    check_teams fixed 2 3 "$C_REGIONS"
}

@test "C, libgomp: the runtime's default ICV (OMP_NUM_THREADS unset) is the upper bound" {
    requires_c
    unset OMP_NUM_THREADS
    run_prog "$C_PROG" -p 2,1,2
    check_teams shim 2 3 "$C_REGIONS"
}

@test "C, libgomp: the shim never grows a team past OMP_NUM_THREADS=1; num_threads(2) keeps 2 on 1 CPU" {
    requires_c
    OMP_NUM_THREADS=1 run_prog "$C_PROG" -p 2,1,2
    check_teams shim 1 3 "$C_REGIONS"
    # the clause regions explicitly, phase 2 on one CPU included
    run grep -c 'region=clause team=2 ok' <<<"$output"
    assert_equal "$output" 3 "num_threads(2) regions with 2 threads"
}

@test "C, libgomp: before the first region omp_get_max_threads() answers the full count, even on one CPU" {
    requires_c
    local compute=$COSCHED_BUILDDIR/share/demo/compute one
    [ -x "$compute" ] || skip "needs $compute"
    one=$(first_cpus 1)
    # compute asks omp_get_max_threads() at its start; -r then runs one region for the whole run: on one
    # CPU the shim gives it (and says) the full count, as for any region of unknown length, so the team
    # can use the cores the job gets later; the same work and checksum as the plain run
    OMP_NUM_THREADS=2 run_prog taskset -c "$one" "$compute" -r -n 2
    [[ $output == "compute: 2 iterations, 2 threads, 1 region, "* ]] || { echo "want a team of 2"; false; }
    local sum=${output##*checksum }
    OMP_NUM_THREADS=2 NOSHIM=1 run_prog "$compute" -n 2
    [ "${output##*checksum }" = "$sum" ]
    # a program's teams may differ from region to region (the first of a call site gets the full count,
    # the next ones the CPUs held): the demo barrier kernel checks each region against its own team
    OMP_NUM_THREADS=2 run_prog taskset -c "$one" "$COSCHED_BUILDDIR/share/demo/barrier" -n 1000
    [[ $output == *"checksum 2.000000e+03" ]]
}

@test "C, libgomp: opt-out with COSCHED_OMP=off (and 0, no, false), and with OMP_DYNAMIC=false" {
    requires_c
    for v in off 0 NO false; do
        COSCHED_OMP=$v OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 1
        check_teams fixed 2 1 "$C_REGIONS"
        assert_equal "$stderr" "" "stderr with COSCHED_OMP=$v"
    done
    for v in false ' FALSE '; do
        OMP_DYNAMIC=$v OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 1
        check_teams fixed 2 1 "$C_REGIONS"
    done
    # explicitly on: the shim works (on 2 CPUs first: a call site's first
    # region, of unknown length, gets the full team)
    COSCHED_OMP=on OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 2,1
    check_teams shim 2 2 "$C_REGIONS"
}

@test "C, libgomp: COSCHED_OMP=bogus says so once on stderr and leaves the teams alone" {
    requires_c
    COSCHED_OMP=bogus OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 1
    check_teams fixed 2 1 "$C_REGIONS"
    assert_equal "$stderr" "cosched-omp: COSCHED_OMP='bogus' is not on or off; OpenMP teams keep their sizes (the shim is off)" "stderr"
}

@test "C, libgomp: a thread binding in force (OMP_PROC_BIND=true) turns the shim off" {
    requires_c
    # libgomp binds the main thread to one CPU before main(): -c names the CPUs
    OMP_PROC_BIND=true OMP_NUM_THREADS=2 run_prog "$C_PROG" -p 2,1 -c "$(first_cpus 2)"
    check_teams fixed 2 2 "$C_REGIONS"
}

@test "C, LLVM libomp: team sizes follow the CPUs 2 -> 1 -> 2, num_threads keeps 2, results right" {
    requires_llvm
    run ldd "$LLVM_PROG"
    [[ $output == *libomp* ]] || { echo "$LLVM_PROG does not use libomp: $output"; false; }
    OMP_NUM_THREADS=2 run_prog "$LLVM_PROG" -p 2,1,2
    check_teams shim 2 3 "$LLVM_REGIONS"
}

@test "C, LLVM libomp, without the shim and opted out: teams keep 2" {
    requires_llvm
    NOSHIM=1 OMP_NUM_THREADS=2 run_prog "$LLVM_PROG" -p 2,1,2
    check_teams fixed 2 3 "$LLVM_REGIONS"
    COSCHED_OMP=off OMP_NUM_THREADS=2 run_prog "$LLVM_PROG" -p 1
    check_teams fixed 2 1 "$LLVM_REGIONS"
}

@test "Fortran, libgomp: team sizes and omp_get_max_threads follow the CPUs 2 -> 1 -> 2, results right" {
    requires_f
    two=$(first_cpus 2) one=$(first_cpus 1)
    OMP_NUM_THREADS=2 run_prog "$F_PROG" "$two" "$one" "$two"
    check_teams shim 2 3 "$F_REGIONS"
    NOSHIM=1 OMP_NUM_THREADS=2 run_prog "$F_PROG" "$two" "$one" "$two"
    check_teams fixed 2 3 "$F_REGIONS"
}

@test "an OpenMP library dlopen()ed with RTLD_LOCAL by a program that is not OpenMP: its region is resized too (once its length is known)" {
    requires multicore openmp
    lib=$PROGS/libompdl.so
    [ -f "$lib" ] && [ -x "$PROGS/ompdl" ] || skip "needs $lib and $PROGS/ompdl (make check builds them)"
    one=$(first_cpus 1)
    # libgomp is outside the global scope: the shim finds it by name (RTLD_NOLOAD);
    # the first region of a call site is of unknown length: the full team
    OMP_NUM_THREADS=2 run_prog taskset -c "$one" "$PROGS/ompdl" "$lib"
    assert_equal "$output" "team=2,1 sum=ok" "two regions on 1 CPU with the shim"
    NOSHIM=1 OMP_NUM_THREADS=2 run_prog taskset -c "$one" "$PROGS/ompdl" "$lib"
    assert_equal "$output" "team=2,2 sum=ok" "two regions on 1 CPU without the shim"
}

# sched_getaffinity calls of `ompbench ARGS` under strace: $count, and $wall_ms, the regions' wall time
count_getaffinity() {
    run --separate-stderr env OMP_NUM_THREADS=2 LD_PRELOAD="$SHIM" \
        strace --seccomp-bpf -f -qq -e trace=sched_getaffinity -o "$BATS_TEST_TMPDIR/strace.out" "$PROGS/ompbench" "$@"
    echo "ompbench $* -> status $status: $output"
    echo "stderr: $stderr"
    [ "$status" -eq 0 ]
    count=$(grep -c 'sched_getaffinity(' "$BATS_TEST_TMPDIR/strace.out")
    wall_ms=$(awk '/^regions=/ { split($1, r, "="); split($3, t, "="); printf "%d", r[2] * t[2] / 1e6 + 1 }' <<<"$output")
    echo "sched_getaffinity: $count calls in $wall_ms ms of regions"
}

@test "no system call per region: with a page the affinity is re-read when the generation moves (or after 100 ms), without one once per clock tick" {
    requires multicore openmp
    command -v strace >/dev/null || skip "needs strace"
    [ -x "$PROGS/ompbench" ] || skip "needs $PROGS/ompbench (make check builds it)"
    # with a page whose generation never moves: one read per thread, then one per 100 ms
    count_getaffinity -P -n 20000
    [[ $output == *"page team=2 regions=20000"* ]] || { echo "the reverse channel did not count 20000 regions of 2"; false; }
    [ "$count" -le $((wall_ms / 100 + 10)) ] || { echo "$count reads: more than one per 100 ms"; false; }
    [ "$count" -lt 2000 ]
    # without a page: at most one read per millisecond
    count_getaffinity -n 20000
    [ "$count" -le $((wall_ms + 10)) ] || { echo "$count reads: more than one per ms"; false; }
}

@test "the reverse channel counts every region of a job's processes: 71 at once, more than the page has slots, forked after a region" {
    requires openmp
    [ -x "$PROGS/ompbench" ] || skip "needs $PROGS/ompbench (make check builds it)"
    # each process counts in a slot of its own (a plain add), those beyond the
    # page's 62 slots in its shared count; a child forked after its parent's
    # first region must not count in its parent's slot (two writers lose counts)
    OMP_NUM_THREADS=1 run_prog "$PROGS/ompbench" -P -F 70 -n 2000
    [[ $output == *"page team=1 regions=$((1 + 71 * 2000)) "* ]] || { echo "want $((1 + 71 * 2000)) regions"; false; }
    # every process claimed a slot (the children after their parent's first region): 71 claims, 62 slots
    [[ $output == *" slots=71"* ]] || { echo "want 71 slots claimed"; false; }
}

@test "the program's own sched_setaffinity is seen by its next region at once, with a page and without" {
    requires multicore openmp
    [ -x "$PROGS/ompbench" ] || skip "needs $PROGS/ompbench (make check builds it)"
    for page in -P ""; do
        OMP_NUM_THREADS=2 run_prog "$PROGS/ompbench" $page -a -n 10
        [[ $output == *"own-move cpus=1 team=1"* ]] || { echo "after its own move to 1 CPU the next region had more than 1 thread ($page)"; false; }
    done
}

@test "programs that are not OpenMP run under the shim exactly as without it" {
    run env LD_PRELOAD="$SHIM" sh -c 'echo out; echo err >&2; exit 3'
    echo "status $status: $output"
    [ "$status" -eq 3 ]
    assert_equal "$output" "out"$'\n'"err" "output"
    want=$(printf 'b\na\nc\n' | sort | md5sum)
    got=$(printf 'b\na\nc\n' | env LD_PRELOAD="$SHIM" sort | md5sum)
    assert_equal "$got" "$want" "sort under the shim"
    # a threaded program that is not OpenMP
    run env LD_PRELOAD="$SHIM" timeout 10 "$PROGS/spin" -t 2 -c 0.2
    echo "spin: status $status: $output"
    [ "$status" -eq 0 ]
}

# ------------------------------------------------------------------ cosched run injects the shim

# job_env [ENV...] -- COSCHED-ARGS...: the lines a job printed, without cosched's [name] prefix
# (under --policy gang unless COSCHED-ARGS give another: the last --policy wins)
job_env() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    run --separate-stderr env "${envs[@]}" "$COSCHED" run --policy gang "$@"
    echo "cosched run $* -> status $status"
    echo "$output"
    echo "stderr: $stderr"
    [ "$status" -eq 0 ]
    output=$(sed 's/^\[[^]]*\] //' <<<"$output")
}

@test "cosched run: a dynamically linked job gets the shim first in LD_PRELOAD and the wait policy the user set" {
    requires cosched
    job_env -u LD_PRELOAD -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u KMP_BLOCKTIME -- \
        -- "$PROGS/showenv" LD_PRELOAD OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME
    assert_equal "$output" "LD_PRELOAD=$SHIM"$'\n'"OMP_WAIT_POLICY unset"$'\n'"GOMP_SPINCOUNT unset"$'\n'"KMP_BLOCKTIME unset" "job environment"
    # the user's own preloads stay, after the shim; the user's wait policy stays
    # (cosched gets that LD_PRELOAD too: under make check-asan its ASan must not insist on coming first)
    job_env LD_PRELOAD=libm.so.6 OMP_WAIT_POLICY=active ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        -- -- "$PROGS/showenv" LD_PRELOAD OMP_WAIT_POLICY
    assert_equal "$output" "LD_PRELOAD=$SHIM:libm.so.6"$'\n'"OMP_WAIT_POLICY=active" "job environment"
    # a script: its interpreter is dynamic, the shim goes in
    printf '#!/bin/sh\necho "p=$LD_PRELOAD w=${OMP_WAIT_POLICY-unset}"\n' > job.sh
    chmod +x job.sh
    job_env -u LD_PRELOAD -u OMP_WAIT_POLICY -- -- ./job.sh
    assert_equal "$output" "p=$SHIM w=unset" "script job"
}

@test "cosched run: passive waiting stays where the shim cannot apply (static binary, opt-outs, bound threads, --omp-shim off, policies sharing cpus)" {
    requires cosched
    [ -x "$PROGS/showenv_static" ] || skip "needs $PROGS/showenv_static (make check builds it; needs libc.a)"
    passive="LD_PRELOAD unset"$'\n'"OMP_WAIT_POLICY=passive"$'\n'"GOMP_SPINCOUNT=0"$'\n'"KMP_BLOCKTIME=0"
    unsets=(-u LD_PRELOAD -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u KMP_BLOCKTIME -u COSCHED_OMP -u OMP_DYNAMIC -u OMP_PROC_BIND -u OMP_PLACES -u KMP_AFFINITY)
    show=(LD_PRELOAD OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME)
    job_env "${unsets[@]}" -- -- "$PROGS/showenv_static" "${show[@]}"
    assert_equal "$output" "$passive" "static job"
    job_env "${unsets[@]}" -- --omp-shim off -- "$PROGS/showenv" "${show[@]}"
    assert_equal "$output" "$passive" "--omp-shim off"
    for e in COSCHED_OMP=off OMP_DYNAMIC=false OMP_PROC_BIND=true OMP_PLACES=cores; do
        job_env "${unsets[@]}" "$e" -- -- "$PROGS/showenv" "${show[@]}"
        assert_equal "$output" "$passive" "job with $e"
    done
    # OMP_PROC_BIND=false binds nothing: the shim applies
    job_env "${unsets[@]}" OMP_PROC_BIND=false -- -- "$PROGS/showenv" LD_PRELOAD OMP_WAIT_POLICY
    assert_equal "$output" "LD_PRELOAD=$SHIM"$'\n'"OMP_WAIT_POLICY unset" "job with OMP_PROC_BIND=false"
    # policies that run jobs on the same CPUs (shares_cpus = true): passive, no shim
    for pol in linux lca lbb llcmrb; do
        job_env "${unsets[@]}" -- --policy $pol -- "$PROGS/showenv" "${show[@]}"
        assert_equal "$output" "$passive" "--policy $pol"
    done
    # --omp-env off: the environment is the user's, nothing preloaded
    job_env "${unsets[@]}" -- --omp-env off -- "$PROGS/showenv" "${show[@]}"
    assert_equal "$output" "LD_PRELOAD unset"$'\n'"OMP_WAIT_POLICY unset"$'\n'"GOMP_SPINCOUNT unset"$'\n'"KMP_BLOCKTIME unset" "--omp-env off"
}

@test "cosched run: an OpenMP job's teams follow its CPUs 2 -> 1 -> 2, results right" {
    requires cosched
    requires_c
    job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- -- "$C_PROG" -p 2,1,2
    check_teams shim 2 3 "$C_REGIONS"
}

@test "cosched run folds two OpenMP jobs (tft): their teams shrink to the core each holds; gang, or --omp-shim off, keeps 2" {
    requires cosched
    requires_c
    # -l: regions for 1.5 s, each split in omp_get_max_threads() parts and checked; one line of team counts
    for pol in tft gang; do
        job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- --policy "$pol" --quantum 200ms -- "$C_PROG" -l 1.5 ::: "$C_PROG" -l 1.5
        assert_equal "$(grep -c '^teams: .* ok$' <<<"$output")" 2 "jobs whose every region was right ($pol)"
        if [ "$pol" = tft ]; then
            # each job on one core (20-engine checks the placement): teams of 1
            assert_equal "$(grep -c '^teams: 1=' <<<"$output")" 2 "jobs with 1-thread teams under tft"
        else
            # each job on both cores when it runs, frozen otherwise: teams of 2
            assert_equal "$(grep -c '^teams: 2=[0-9]* regions' <<<"$output")" 2 "jobs with only 2-thread teams under gang"
        fi
    done
    job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- --policy tft --quantum 200ms --omp-shim off -- "$C_PROG" -l 1 ::: "$C_PROG" -l 1
    assert_equal "$(grep -c '^teams: 2=[0-9]* regions=[0-9]* ok$' <<<"$output")" 2 "jobs with only 2-thread teams without the shim"
}

@test "cosched run: flca without counters takes CP from the jobs' region throughput (signal regions in the trace)" {
    requires cosched
    requires_c
    command -v jq >/dev/null || skip "needs jq"
    # two OpenMP jobs folded side by side; from the second epoch on, each
    # job's CP comes from the regions its shim counted (cosched.ageing)
    job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- --policy flca --counters none --quantum 200ms \
        --trace "$BATS_TEST_TMPDIR/trace" -- "$C_PROG" -l 1.5 ::: "$C_PROG" -l 1.5
    signals=$(jq -r 'select(.type == "step") | .jobs[] | "\(.id) \(.omp_regions) \(.policy.signal)"' "$BATS_TEST_TMPDIR/trace" | sort -u)
    echo "$signals"
    for id in 1 2; do
        grep -q "^$id [0-9]* regions$" <<<"$signals" || { echo "job $id: no step whose CP came from regions"; false; }
    done
    # --policy-opt region_progress=no: from CPU time
    job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- --policy flca --counters none --quantum 200ms --policy-opt region_progress=no \
        --trace "$BATS_TEST_TMPDIR/trace2" -- "$C_PROG" -l 1 ::: "$C_PROG" -l 1
    signals=$(jq -r 'select(.type == "step") | .jobs[] | .policy.signal // empty' "$BATS_TEST_TMPDIR/trace2" | sort -u)
    assert_equal "$signals" cpu "signals with region_progress=no"
}

@test "cosched run: a long region that starts folded keeps its full team and uses both cores once the job gets the node" {
    requires cosched
    requires multicore openmp
    command -v jq >/dev/null || skip "needs jq"
    [ -x "$PROGS/ompbench" ] || skip "needs $PROGS/ompbench (make check builds it)"
    # tft folds the long job onto one core beside the spinner; when the
    # spinner ends the long job holds both cores for its region's rest
    job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- --policy tft --quantum 200ms --trace "$BATS_TEST_TMPDIR/trace" \
        -- "$PROGS/ompbench" -k long -s 3.5 ::: "$PROGS/spin" -t 1 -w 1.2
    [[ $output == *"regions=1 team=2 "* ]] || { echo "the long region did not have 2 threads"; false; }
    # its steps: cores held, wall, CPU time, the team the page reported, the idle seconds of its cores
    steps=$(jq -r 'select(.type == "step") | (.end - .start) as $w | (.cpu_idle // []) as $ci | .jobs[]
                   | select(.id == 1) | .cpus as $c
                   | "\(.cpus) \($w) \(.cpu_s) \(.omp_team) \([$ci[] | select(($c | split("-") | map(tonumber))
                        as $r | .[0] >= $r[0] and .[0] <= ($r[-1])) | .[1]] | add // 0)"' "$BATS_TEST_TMPDIR/trace")
    echo "$steps"
    # it started folded, with the full team (the page says so)
    [ "$(awk '$1 !~ /[-,]/ && $4 == 2' <<<"$steps" | wc -l)" -ge 1 ] || { echo "no folded step with a team of 2"; false; }
    # on the node (the region's middle: not its first or last step), its CPU time against what its cores
    # could give it - its own CPU time and the time they sat idle (other processes of a busy machine take
    # the rest): a team of 1 on two idle-able cores uses about half, a team of 2 all of it
    awk '{ n++; c[n] = $1; u[n] = $3; idle[n] = $5 }
         END {
             for (i = 2; i < n; i++)
                 if (c[i] ~ /[-,]/) { u2 += u[i]; i2 += idle[i] }
             if (u2 <= 0) { print "no unfolded step"; exit 1 }
             r = u2 / (u2 + i2)
             printf "on the node: %.2f cpu-s used, %.2f idle: %.2f of what its cores could give (want >= 0.8)\n", u2, i2, r
             exit r >= 0.8 ? 0 : 1
         }' <<<"$steps"
}

@test "cosched run: a policy sees the shim's reverse channel (job.team, job.last.regions), as the trace does" {
    requires cosched
    requires multicore openmp
    command -v jq >/dev/null || skip "needs jq"
    [ -x "$PROGS/ompbench" ] || skip "needs $PROGS/ompbench (make check builds it)"
    mkdir pol
    # every job alone on every CPU in turn; says what the snapshot held
    cat > pol/see.lua <<'LUA'
local rotation = require "cosched.rotation"
return { api = 1, name = "see", description = "gang, saying what it sees of the shim",
  plan = function(snap)
    local info = {}
    for _, j in ipairs(snap.jobs) do
      info[j.id] = { team = j.team or -1, regions = j.last and j.last.regions or -1 }
    end
    local job = rotation.pick(snap, 1)[1]
    if not job then return { { jobs = {} } }, nil, info end
    return { { jobs = { { id = job.id, cpus = snap.cpus } } } }, nil, info
  end }
LUA
    job_env -u LD_PRELOAD OMP_NUM_THREADS=2 -- --policy-path pol --policy see --quantum 100ms --trace t.jsonl \
        -- "$PROGS/ompbench" -n 300000 ::: "$PROGS/showenv" COSCHED_OMP_PAGE
    [[ $output == *"COSCHED_OMP_PAGE="[0-9]* ]] || { echo "the job was not told its page"; false; }
    # the OpenMP job: what the trace says is what the policy saw a step later
    jq -c 'select(.type == "step") | .jobs[] | select(.id == 1) | [.omp_team, .omp_regions, .policy.team, .policy.regions]' t.jsonl > seen
    cat seen
    # some step counted regions, of teams of 2 (it ran alone on both CPUs), and the policy saw them
    jq -e -s 'map(select(.[1] > 0 and .[0] == 2)) | length > 0' seen
    jq -e -s 'map(select(.[2] == 2 and .[3] > 0)) | length > 0' seen
    # the total is every region the program ran
    [ "$(jq -s 'map(.[1]) | add' seen)" -eq 300000 ]
}
