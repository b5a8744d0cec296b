#!/usr/bin/env bats
# 25-profiles: counter profiles (profiles/*.txt, launcher/counters/profile.c).
# Every shipped profile lints clean and defines each required metric or
# declares it unavailable; broken profiles are refused with FILE:LINE: and
# what was expected; `cosched profiles` lists the profiles and says which one
# matches this CPU (or, honestly, that none does and why); the C unit test
# tests/progs/profile_eval checks the formula evaluator.  No PMU, no root.

load helpers/common

REQUIRED="instructions cycles ipc bw_l1 bw_l2 bw_llc mem_bw llc_misses llc_refs mpki orb_full remote_accesses local_accesses"

setup() {
    requires cosched
    cd "$BATS_TEST_TMPDIR"
    shipped_data_only
    SHIPPED=$COSCHED_SRCDIR/profiles
}

# base: a small valid profile; the numbers on the left are its line numbers,
# which the broken variants below refer to.
base() {
    cat <<'EOF'
SHORT  test profile for 25-profiles.bats
ARCH   intel 6 0x55
SOURCE tests/25-profiles.bats
EVENTSET
FIXC0  INST_RETIRED.ANY         perf=hw:instructions
FIXC1  CPU_CLK_UNHALTED.THREAD  perf=hw:cycles
PMC0   L1D.REPLACEMENT          perf=raw:event=0x51,umask=0x01
PMC1   L2_LINES_IN.ALL          perf=raw:event=0xf1,umask=0x1f
PMC2   LONGEST_LAT_CACHE.MISS   perf=raw:event=0x2e,umask=0x41
UNC0   UNC_M_CAS_COUNT.RD       perf=pmu:uncore_imc_*:event=0x04,umask=0x03 scope=socket
METRICS
instructions [instructions] FIXC0
cycles       [cycles] FIXC1
ipc          FIXC0/FIXC1
bw_l1        [GB/s] 1.0E-09*PMC0*clsize/time
bw_l2        [GB/s] 1.0E-09*PMC1*clsize/time
bw_llc       [GB/s] 1.0E-09*PMC2*clsize/time
mem_bw       [GB/s] 1.0E-09*UNC0*clsize/time
llc_misses   PMC2
llc_refs     - unavailable: not in this test
mpki         1000*llc_misses/instructions
orb_full     - unavailable: not in this test
remote_accesses - unavailable: not in this test
local_accesses  - unavailable: not in this test
EOF
}

# broken FILE LINE MESSAGE: `cosched profiles --lint FILE` fails with exit 1
# and prints "FILE:LINE:" followed (maybe after a column) by MESSAGE
broken() {
    local file=$1 line=$2 msg=$3
    run "$COSCHED" profiles --lint "$file"
    echo "status: $status"
    echo "output: $output"
    [ "$status" -eq 1 ]
    assert_contains "$output" "$file:$line:"
    assert_contains "$output" "$msg"
    [[ $output != *"$file: ok"* ]]
}

@test "profiles: every shipped profile lints clean, with no unused event" {
    local f n=0
    run "$COSCHED" profiles --lint "$SHIPPED"/*.txt
    echo "$output"
    [ "$status" -eq 0 ]
    for f in "$SHIPPED"/*.txt; do
        assert_contains "$output" "$f: ok"
        n=$((n + 1))
    done
    [ "$n" -ge 10 ] || { echo "only $n shipped profiles" >&2; return 1; }
    [[ $output != *"not used by any metric"* ]]
    [[ $output != *error* ]]
}

@test "profiles: each required metric is defined or declared unavailable, and every unavailable one has a CAVEAT" {
    local f m line bad=0
    for f in "$SHIPPED"/*.txt; do
        for m in $REQUIRED; do
            # independent of the parser: a line of the METRICS section starting with the name
            line=$(awk -v m="$m" '/^METRICS/ { s = 1; next } /^(LONG|EVENTSET)/ { s = 0 } s && $1 == m' "$f")
            if [ -z "$line" ]; then
                echo "$f: required metric $m missing" >&2
                bad=1
            elif [[ $line == *"- unavailable:"* ]] && ! grep -q "^CAVEAT.*$m" "$f"; then
                echo "$f: $m is declared unavailable but no CAVEAT line mentions it" >&2
                bad=1
            fi
        done
        grep -q '^SOURCE ' "$f" || { echo "$f: no SOURCE line" >&2; bad=1; }
    done
    [ "$bad" -eq 0 ]
}

@test "profiles: the four bandwidths are in GB/s in every shipped profile" {
    local f m bad=0
    for f in "$SHIPPED"/*.txt; do
        for m in bw_l1 bw_l2 bw_llc mem_bw; do
            awk -v m="$m" '$1 == m' "$f" | grep -Eq '\[GB/s\]|- unavailable:' || { echo "$f: $m not in [GB/s]" >&2; bad=1; }
        done
    done
    [ "$bad" -eq 0 ]
}

@test "profiles: the base test profile is valid (so the broken variants test one thing each)" {
    base > good.txt
    run "$COSCHED" profiles --lint good.txt
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "good.txt: ok (good: 6 events, 13 metrics, 4 declared unavailable)"
}

# edited FILE SED LINE MESSAGE: base edited by the sed script SED, in FILE,
# is broken at LINE with MESSAGE
edited() {
    base | sed "$2" > "$1"
    broken "$1" "$3" "$4"
}

@test "profiles: unknown section" {
    edited bad.txt '4s/^EVENTSET$/EVENTS/' 4 "unknown section 'EVENTS' (expected one of SHORT, ARCH, SOURCE, CAVEAT, EVENTSET, METRICS, LONG"
}

@test "profiles: bad perf specs" {
    edited hw.txt '6s/perf=hw:cycles/perf=hw:cylces/' 6 "perf=hw:cylces: unknown hardware event 'cylces' (known: cycles,"
    edited term.txt '7s/event=0x51,umask=0x01/evnt=0x51,umask=0x01/' 7 "unknown term 'evnt' (expected event, umask, cmask, inv, edge, any, config1)"
    edited big.txt '7s/umask=0x01/umask=0x1ff/' 7 "umask= expects a number from 0 to 0xff"
    edited kind.txt '7s/perf=raw:event=0x51,umask=0x01/perf=msr:0x10/' 7 "unknown kind 'msr' (expected hw, sw, cache, raw or pmu)"
    edited pmu.txt '10s/uncore_imc_\*/uncore_imc*/' 10 "a PMU wildcard is written NAME_* (every NAME_<number>)"
    edited scope.txt '10s/scope=socket/scope=package/' 10 "scope= expects core, uncore or socket, got 'package'"
    edited noperf.txt '5s/ perf=hw:instructions//' 5 "expected perf=SPEC for slot FIXC0"
}

@test "profiles: unknown slot in a formula names the column and the known slots" {
    edited slot.txt '15s/PMC0/PMC7/' 15 "15:29: unknown slot or variable 'PMC7' (slots: FIXC0 FIXC1 PMC0 PMC1 PMC2 UNC0"
}

@test "profiles: unbalanced parentheses" {
    edited open.txt '16s|1.0E-09\*PMC1|1.0E-09*(PMC1|' 16 "expected ')' to close the '(' at column 29, but the formula ends"
    edited close.txt '16s|clsize/time|clsize)/time|' 16 "unexpected ')' (no '(' to close)"
}

@test "profiles: a formula is bounded with the metrics it uses counted in full (m1 m0*m0*m0*m0, m2 m1*m1*m1*m1 ...)" {
    # found by tests/fuzz (profile): evaluation expands every metric where it is
    # used, so such a chain took 4^N steps every quantum; m6 would be 9555
    { base; echo "m0 FIXC0"; for i in 1 2 3 4 5 6 7; do echo "m$i m$((i - 1))*m$((i - 1))*m$((i - 1))*m$((i - 1))"; done; } > chain.txt
    broken chain.txt 31 "31:7: formula too long (more than 4096 operators and metric references, the metrics it uses counted in full); 'm5' alone is 2387"
    { base; echo "m0 FIXC0"; for i in 1 2 3 4 5; do echo "m$i m$((i - 1))*m$((i - 1))*m$((i - 1))*m$((i - 1))"; done; } > ok.txt
    run "$COSCHED" profiles --lint ok.txt
    [ "$status" -eq 0 ]
}

@test "profiles: duplicate slot" {
    edited dup.txt '8s/^PMC1 /PMC0 /' 8 "duplicate slot 'PMC0' (already defined at line 7)"
}

@test "profiles: missing ARCH, SHORT, SOURCE" {
    edited noarch.txt '2d' 23 "missing ARCH section (expected 'ARCH intel|amd|any FAMILY MODEL...')"
    edited noshort.txt '1d' 23 "missing SHORT section"
    edited nosource.txt '3d' 23 "missing SOURCE line"
    edited nomodel.txt '2s/.*/ARCH intel/' 2 "ARCH: a intel profile needs a family and at least one model (or 'test')"
    edited vendor.txt '2s/.*/ARCH ibm 6 0x55/' 2 "ARCH: expected the vendor intel, amd or any, got 'ibm'"
}

@test "profiles: metric name repeated" {
    { base; echo "ipc          FIXC1/FIXC0"; } > rep.txt
    broken rep.txt 25 "metric 'ipc' repeated (first defined at line 14)"
}

@test "profiles: a required metric neither defined nor declared unavailable" {
    edited noorb.txt '22d' 11 "METRICS lacks the required metric 'orb_full' (define it, or declare 'orb_full - unavailable: REASON')"
    edited unit.txt '15s|\[GB/s\]|[MB/s]|' 15 "bw_l1 is a bandwidth: expected the unit [GB/s], got [MB/s]"
    edited reason.txt '22s/- unavailable: not in this test/- unavailable/' 22 "expected 'unavailable: REASON' after '-'"
}

@test "profiles: truncated files" {
    # cut in the middle of a formula (no newline at the end)
    { base | head -n 14; printf 'bw_l1        [GB/s] 1.0E-09*PMC0*'; } > cut.txt
    broken cut.txt 15 "expected a number, slot, variable or '(' but the formula ends here"
    # cut inside the event set: no METRICS at all
    base | head -n 9 > short.txt
    broken short.txt 9 "missing METRICS section"
    # cut in the middle of a perf spec
    { base | head -n 6; printf 'PMC0   L1D.REPLACEMENT          perf=raw:event=0x51,umask='; } > spec.txt
    broken spec.txt 7 "umask= expects a number"
}

@test "profiles: --lint reports the first error of each file and lints the rest" {
    base > good.txt
    base | sed '4s/^EVENTSET$/EVENTS/' > bad1.txt
    base | sed '15s/PMC0/PMC7/;16s/PMC1/PMC8/' > bad2.txt
    run "$COSCHED" profiles --lint bad1.txt good.txt bad2.txt
    echo "$output"
    [ "$status" -eq 1 ]
    assert_contains "$output" "bad1.txt:4:"
    assert_contains "$output" "good.txt: ok"
    assert_contains "$output" "bad2.txt:15:"
    [[ $output != *"bad2.txt:16:"* ]]   # the first error only
    run "$COSCHED" profiles --lint no-such-file.txt
    [ "$status" -eq 1 ]
    assert_contains "$output" "no-such-file.txt: No such file or directory"
}

@test "profiles: usage errors exit 2" {
    run "$COSCHED" profiles --lint
    [ "$status" -eq 2 ]
    assert_contains "$output" "--lint needs at least one FILE"
    run "$COSCHED" profiles --frob
    [ "$status" -eq 2 ]
    assert_contains "$output" "unknown option '--frob'"
    run "$COSCHED" profiles extra-arg
    [ "$status" -eq 2 ]
    assert_contains "$output" "takes no arguments"
    run "$COSCHED" profiles --cpuid intel
    [ "$status" -eq 2 ]
    assert_contains "$output" "--cpuid 'intel': expected VENDOR:FAMILY:MODEL"
    run "$COSCHED" profiles --help
    [ "$status" -eq 0 ]
    assert_contains "$output" "--profile-path DIR"
}

@test "profiles: cosched profiles lists every shipped profile and states the match for this machine" {
    local f name vendor family model
    run "$COSCHED" profiles
    echo "$output"
    [ "$status" -eq 0 ]
    for f in "$SHIPPED"/*.txt; do
        name=${f##*/}
        assert_contains "$output" "${name%.txt} "
        assert_contains "$output" "$f"
    done
    assert_contains "$output" "test-software    any (test)"
    assert_contains "$output" "this CPU: "
    [[ $output == *"match: "* || $output == *"no profile matches: "* ]]
    # what hwloc says about this machine, read independently with lstopo
    command -v lstopo-no-graphics >/dev/null || skip "lstopo-no-graphics missing: cannot cross-check the CPU"
    read -r vendor family model < <(lstopo-no-graphics --only package -v 2>/dev/null | grep -m1 CPUVendor |
        sed -nE 's/.*CPUVendor=([A-Za-z]+).*CPUFamilyNumber=([0-9]+).*CPUModelNumber=([0-9]+).*/\1 \2 \3/p') || true
    [ -n "$vendor" ] || skip "hwloc shows no CPUVendor here"
    # the notation of cosched-counters(5), CPU IDENTIFICATION: family in
    # decimal below 10, else 0x-hex; model always 0x-hex, two digits
    local fam
    if [ "$family" -lt 10 ]; then fam=$family; else fam=$(printf '0x%x' "$family"); fi
    assert_contains "$output" "this CPU: $vendor family $fam model $(printf '0x%02x' "$model") (hwloc)"
    # whatever this CPU is, the verdict is the one --cpuid gives for the same
    # vendor, family and model (matched or not, and why)
    local verdict
    verdict=$(printf '%s\n' "$output" | grep -E '^(match|no profile matches): ')
    case $vendor in
    GenuineIntel|AuthenticAMD)
        run "$COSCHED" profiles --cpuid "$vendor:$family:$model"
        [ "$status" -eq 0 ]
        assert_contains "$output" "$verdict" ;;
    *)
        assert_contains "$verdict" "no profile matches: " ;;
    esac
}

@test "profiles: --cpuid picks the profile of known CPUs, and says why when none fits" {
    run "$COSCHED" profiles --cpuid GenuineIntel:6:0x55
    [ "$status" -eq 0 ]
    assert_contains "$output" "match: skylakeX $SHIPPED/skylakeX.txt"
    run "$COSCHED" profiles --cpuid GenuineIntel:6:0x8f
    assert_contains "$output" "match: sapphirerapids "
    run "$COSCHED" profiles --cpuid AuthenticAMD:0x19:0x01
    assert_contains "$output" "match: zen3 "
    run "$COSCHED" profiles --cpuid AuthenticAMD:25:0x11
    assert_contains "$output" "match: zen4 "
    run "$COSCHED" profiles --cpuid AuthenticAMD:0x17:0x31
    assert_contains "$output" "match: zen2 "
    run "$COSCHED" profiles --cpuid GenuineIntel:6:0xa7
    [ "$status" -eq 0 ]
    assert_contains "$output" "no profile matches: no profile covers intel family 6 model 0xa7; this family has: "
    assert_contains "$output" "skylakeX (0x55)"
    assert_contains "$output" "test profiles are never matched"
    run "$COSCHED" profiles --cpuid AuthenticAMD:0x1a:0x02
    assert_contains "$output" "match: zen5 "
    run "$COSCHED" profiles --cpuid AuthenticAMD:0x1a:0x50
    assert_contains "$output" "no profile covers amd family 0x1a model 0x50; this family has: "
    run "$COSCHED" profiles --cpuid AuthenticAMD:0x1b:0x00
    assert_contains "$output" "no profile covers amd family 0x1b model 0x00; no profile is for that family"
    run "$COSCHED" profiles --cpuid HygonGenuine:0x18:0
    assert_contains "$output" "vendor 'HygonGenuine' is neither GenuineIntel nor AuthenticAMD"
}

@test "profiles: --profile-path comes first, shadows by name, and broken profiles are reported" {
    mkdir -p mine
    base | sed '2s/.*/ARCH   intel 6 0xa7 0x55/' > mine/skylakeX.txt
    run "$COSCHED" profiles --profile-path mine --cpuid GenuineIntel:6:0xa7
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "match: skylakeX mine/skylakeX.txt"
    assert_contains "$output" "(shadowed by mine/skylakeX.txt)"
    base | sed '15s/PMC0/PMC7/' > mine/broken.txt
    run "$COSCHED" profiles --profile-path mine --cpuid GenuineIntel:6:0x55
    echo "$output"
    [ "$status" -eq 1 ]
    assert_contains "$output" "mine/broken.txt:15:29: unknown slot or variable 'PMC7'"
    assert_contains "$output" "(broken: see the error above)"
    assert_contains "$output" "match: skylakeX mine/skylakeX.txt"
}

@test "profiles: --json is valid JSON with the CPU, the profiles and the match" {
    requires python3
    run "$COSCHED" profiles --json --cpuid GenuineIntel:6:0x55
    [ "$status" -eq 0 ]
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["cpu"] == {"vendor": "GenuineIntel", "family": 6, "model": 85, "source": "--cpuid"}, d["cpu"]
assert d["match"] == "skylakeX", d["match"]
names = {p["name"]: p for p in d["profiles"]}
assert names["test-software"]["test"] is True
assert names["zen3"]["models"] == [[0, 15], [32, 95]], names["zen3"]
' "$output"
    run "$COSCHED" profiles --json --cpuid GenuineIntel:6:0xa7
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["match"] is None and "0xa7" in d["why"], d
' "$output"
}

@test "profiles: profile_eval unit tests (formulas, division by zero, matching)" {
    [ -x "$PROGS/profile_eval" ] || skip "needs $PROGS/profile_eval (make check builds it)"
    run "$PROGS/profile_eval" "$SHIPPED"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output != *"not ok"* ]]
    assert_contains "$output" "ok 3 - ipc = 2.0 for FIXC0=2e9, FIXC1=1e9"
    assert_contains "$output" "x/0 = +inf"
    assert_contains "$output" "0/0 = NaN"
    assert_contains "$output" "GenuineIntel family 6 model 0xa7 -> - (got -)"
}
