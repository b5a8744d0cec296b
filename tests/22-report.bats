#!/usr/bin/env bats
# 22-report: `cosched report TRACE` on traces of real runs (and of the
# simulator, for the characterizing state).  Structural: the SVG and the HTML
# parse (python's xml and html parsers) and their rectangles say what the
# trace says (tests/helpers/report_check.py).  Looked at: headless Chromium
# renders the SVG and the page to PNG; the pixel at the centre of each
# rectangle has its colour.  Bad input: exit 2 and a message naming the file,
# the line and what was expected.

load helpers/common
load helpers/jobs
load helpers/tmpdir

CHECK=${COSCHED_SRCDIR}/tests/helpers/report_check.py

# a browser for the screenshots: Debian's chromium (share/setup.sh installs it)
browser() {
    command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

# shoot FILE PNG WIDTH HEIGHT: headless Chromium's screenshot of FILE
shoot() {
    local b
    b=$(browser)
    timeout 120 "$b" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --force-device-scale-factor=1 \
        --user-data-dir="$BATS_TEST_TMPDIR/chromium" --window-size="$3,$4" --screenshot="$PWD/$2" \
        "file://$PWD/$1" >chromium.log 2>&1 || { cat chromium.log; return 1; }
    [ -s "$2" ] || { cat chromium.log; echo "no screenshot $2"; return 1; }
}

tft_trace() {
    "$COSCHED" run --policy tft --quantum 100ms --trace t.jsonl \
        -- "$PROGS/spin" -t 2 -c 0.6 ::: "$PROGS/spin" -t 2 -c 0.6 >/dev/null 2>&1
}

@test "tft, two jobs: the picture gives each its own cpu in every step, folded; SVG agrees with the trace" {
    requires multicore python3
    [ "$(nproc)" -eq 2 ] || skip "written for 2 cpus (tft's halves are one cpu each)"
    tft_trace
    run "$COSCHED" report t.jsonl -o r.svg --summary s.json
    echo "$output"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    python3 "$CHECK" svg r.svg t.jsonl
    python3 - r.svg s.json <<'PY'
import json, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
cs = [r for r in ET.parse(sys.argv[1]).getroot().iter(NS + "rect") if r.get("class") == "cs"]
both = 0
folded = [r for r in cs if r.get("data-state") == "folded"]
for a in folded:
    for b in folded:
        t0 = max(float(a.get("data-t0")), float(b.get("data-t0")))
        t1 = min(float(a.get("data-t1")), float(b.get("data-t1")))
        if t1 - t0 > 1e-4 and a.get("data-cpu") != b.get("data-cpu"):
            assert a.get("data-job") != b.get("data-job"), "one job on both cpus at %.3f: %s" % (t0, a.get("data-job"))
            both += 1
assert both > 0, "never two jobs at once"
# folded while both are live; the last one alone may get both cpus (running)
assert {r.get("data-state") for r in cs} <= {"folded", "running"}, {r.get("data-state") for r in cs}
s = json.load(open(sys.argv[2]))
assert [j["threads"] for j in s["jobs"]] == [2, 2], s["jobs"]
for j in s["jobs"]:
    assert j["completed"] == 1 and j["instances"] == 1, j
    assert j["seconds"]["folded"] > 0.3 and j["seconds"]["folded"] > 2 * j["seconds"]["running"], j
    assert abs(j["throughput"] - 1 / s["duration"]) < 1e-4, (j, s["duration"])
print("each job on its own cpu, folded, in %d overlapping pairs" % both)
PY
}

@test "gang, three jobs: running on every cpu or frozen/waiting; the HTML page and the CSV summary" {
    requires python3
    "$COSCHED" run --policy gang --quantum 100ms --trace g.jsonl \
        -- "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -c 0.3 ::: "$PROGS/spin" -c 0.3 -x 3 >/dev/null 2>&1 || true
    run "$COSCHED" report g.jsonl -o g.html --summary g.csv
    echo "$output"
    [ "$status" -eq 0 ]
    python3 "$CHECK" html g.html g.jsonl
    "$COSCHED" report g.jsonl -o g.svg
    python3 "$CHECK" svg g.svg g.jsonl
    python3 - g.csv g.jsonl <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["name"] for r in rows] == ["spin", "spin-2", "spin-3"], rows
assert [r["completed"] for r in rows] == ["1", "1", "0"], rows
assert [r["not_completed"] for r in rows] == ["0", "0", "1"], rows
steps = [json.loads(l) for l in open(sys.argv[2]) if '"type":"step"' in l]
for r in rows:
    n = sum(1 for s in steps for j in s["jobs"] if j["name"] == r["name"] and j["state"] == "frozen")
    assert int(r["frozen_steps"]) == n and n > 0, (r, n)
    assert int(r["folded_steps"]) == 0, r
print("csv agrees")
PY
    # the text summary without -o
    run "$COSCHED" report g.jsonl
    [ "$status" -eq 0 ]
    assert_contains "$output" "policy gang"
    [ "$(echo "$output" | grep -cE '^ +[123] spin')" -eq 3 ]
}

@test "characterizing: flca with simulated counters shows its characterization quanta" {
    requires python3
    run "$COSCHED" simulate --node paper001 --apps table2 --mix jacobi,stream,gesummv,trisolv --policy flca \
        --trace f.jsonl
    [ "$status" -eq 0 ]
    grep -q '"characterizing":true' f.jsonl
    run "$COSCHED" report f.jsonl -o f.svg --summary f.json
    echo "$output"
    [ "$status" -eq 0 ]
    python3 "$CHECK" svg f.svg f.jsonl
    python3 - f.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["policy"] == "flca", s["policy"]
c = [j for j in s["jobs"] if j["seconds"]["characterizing"] > 0]
assert len(c) == 4, s["jobs"]
print("%d jobs characterized" % len(c))
PY
}

@test "an old trace (no run line, no thread counts) still reads; names are escaped" {
    requires multicore python3
    [ "$(nproc)" -eq 2 ] || skip "written for 2 cpus"
    printf '%s\n' "name='a<&>\"b' -- $PROGS/spin -t 2 -c 0.4" "$PROGS/spin -t 2 -c 0.4" > jobs
    "$COSCHED" run --policy tft --quantum 100ms --trace t.jsonl --jobs jobs >/dev/null 2>&1
    grep -v '"type":"run"' t.jsonl | sed 's/,"threads":[0-9]*//' > old.jsonl
    ! grep -q threads old.jsonl
    run "$COSCHED" report old.jsonl -o o.svg --summary o.json
    [ "$status" -eq 0 ]
    python3 "$CHECK" svg o.svg old.jsonl
    grep -q 'a&lt;&amp;&gt;&quot;b' o.svg
    python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["policy"] is None and all(j["threads"] is None for j in s["jobs"]), s
assert s["jobs"][0]["name"] == "a<&>\"b", s["jobs"][0]
' o.json
}

@test "idle cpus: hatched by the share of each step they sat idle (cpu_idle), the job's colour on top" {
    requires python3
    # two 1 s steps on cpus 0-1: job 1 on both, cpu 1 idle 0.6 s then all of the second step
    cat > idle.jsonl <<'EOF'
{"type":"run","version":2,"command":"run","policy":"tft","quantum":1,"window":0,"cpus":"0-1","control":"cgroup1"}
{"type":"job","event":"start","time":0,"id":1,"name":"a","instance":1,"threads":2,"pid":10}
{"type":"step","seq":0,"epoch":1,"start":0,"end":1,"jobs":[{"id":1,"name":"a","state":"run","cpus":"0-1","cpu_s":1.4}],"cpu_idle":[[1,0.6],[0,0.01]]}
{"type":"step","seq":1,"epoch":2,"start":1,"end":2,"jobs":[{"id":1,"name":"a","state":"run","cpus":"0-1","cpu_s":1}],"cpu_idle":[[1,1.0]]}
EOF
    run "$COSCHED" report idle.jsonl -o i.svg
    [ "$status" -eq 0 ]
    run python3 "$CHECK" svg i.svg idle.jsonl
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "2 idle hatches agree"
    # the hatch of a whole idle step leaves the bar's top 4 px to the job's colour
    python3 - i.svg <<'EOF'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
r = ET.parse(sys.argv[1]).getroot()
cs = [x for x in r.iter(NS + "rect") if x.get("class") == "cs" and x.get("data-cpu") == "1"]
ci = {x.get("data-step"): x for x in r.iter(NS + "rect") if x.get("class") == "ci"}
assert len(cs) == 1 and set(ci) == {"0", "1"}, (len(cs), set(ci))
top, h = float(cs[0].get("y")), float(cs[0].get("height"))
for step, share in (("0", 0.6), ("1", 1.0)):
    y, hh = float(ci[step].get("y")), float(ci[step].get("height"))
    assert abs(y + hh - (top + h)) < 0.01 and abs(hh - (h - 4) * share) < 0.01, (step, y, hh, top, h)
    assert ci[step].get("fill") == "url(#idle)", ci[step].attrib
print("ok")
EOF
}

@test "bad input: exit 2, the file, the line and what was expected" {
    echo 'hello world' > notjson
    run "$COSCHED" report notjson
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: notjson:1: not a cosched trace: expected a JSON object per line"
    printf '{"type":"step","seq":0,"epoch":1,"start":0,"end":0.1,"jobs":[]}\n{"type":"step","seq":1,"ep' > cut.jsonl
    run "$COSCHED" report cut.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: cut.jsonl:2: truncated line"
    printf '{"type":"step","seq":0,"epoch":1,"start":0,"end":0.1,"jobs":[{"id":1,"state":"run"}]}\n' > nocpus.jsonl
    run "$COSCHED" report nocpus.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" 'report: nocpus.jsonl:1: step 0: jobs[0]: expected "cpus" to be a cpu list like "0-3,8"'
    printf '{"type":"step","seq":0,"epoch":1,"start":0,"end":0.1,"jobs":[{"id":1,"state":"run","cpus":"0-100000000"}]}\n' > huge.jsonl
    run "$COSCHED" report huge.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" '(cpus 0 to 4095)'
    sed 's/0-100000000/-5/' huge.jsonl > open.jsonl   # hwloc would read an open range
    run "$COSCHED" report open.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" 'open.jsonl:1: step 0: jobs[0]: expected "cpus" to be a cpu list'
    printf '{"type":"step","seq":3,"epoch":1,"start":0,"end":0.1,"jobs":[],"idle_frozen":{"nobody":-1,"held":0}}\n' > idle.jsonl
    run "$COSCHED" report idle.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" 'report: idle.jsonl:1: step 3: expected "idle_frozen" to be {"nobody": CPU-s, "held": CPU-s}'
    for bad in '{}' '[[0]]' '[[-1,0.1]]' '[[4096,0.1]]' '[[0.5,0.1]]' '[[0,-1]]' '[[0,"x"]]'; do
        printf '{"type":"step","seq":4,"epoch":1,"start":0,"end":0.1,"jobs":[],"cpu_idle":%s}\n' "$bad" > ci.jsonl
        run "$COSCHED" report ci.jsonl
        [ "$status" -eq 2 ]
        assert_contains "$output" 'report: ci.jsonl:1: step 4: '
        assert_contains "$output" 'cpu_idle'
    done
    printf '{"type":"job","event":"start","time":0,"id":1,"name":"a"}\n' > nosteps.jsonl
    run "$COSCHED" report nosteps.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" 'report: nosteps.jsonl: no steps: expected lines {"type":"step", ...}'
    : > empty.jsonl
    run "$COSCHED" report empty.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: empty.jsonl: empty"
    printf '{"type":"step","seq":0,"epoch":1,"start":0,"end":0.1,"jobs":[]}\n[1,2]\n' > arr.jsonl
    run "$COSCHED" report arr.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" 'report: arr.jsonl:2: expected an object with "type"'
    run "$COSCHED" report missing.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: missing.jsonl: cannot read it: No such file or directory"
    run "$COSCHED" report arr.jsonl -o x.png
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: -o x.png: unknown format 'png' (expected FILE.svg or FILE.html)"
    run "$COSCHED" report arr.jsonl --summary x.txt
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: --summary x.txt: unknown format 'txt' (expected FILE.json or FILE.csv)"
    run "$COSCHED" report --sumary x.json arr.jsonl
    [ "$status" -eq 2 ]
    assert_contains "$output" "did you mean --summary?"
    run "$COSCHED" report
    [ "$status" -eq 2 ]
    assert_contains "$output" "report: which trace?"
    [ ! -e x.png ] && [ ! -e x.txt ]
}

@test "looked at in a real browser: headless Chromium draws every rectangle where the SVG puts it" {
    requires multicore python3
    [ -n "$(browser)" ] || skip "needs chromium (share/setup.sh installs it)"
    tft_trace
    "$COSCHED" report t.jsonl -o r.svg
    w=$(sed -n 's/.*<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1/p' r.svg)
    h=$(sed -n 's/.*<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\2/p' r.svg)
    shoot r.svg r.png "$w" "$h"
    python3 "$CHECK" pixels r.png r.svg 3
    "$COSCHED" report t.jsonl -o r.html
    shoot r.html h.png 1600 900
    python3 "$CHECK" nonblank h.png
    # the folded state's colour and both jobs' colours are on the page
    python3 "$CHECK" colours h.png '#1e88e5' '#9467bd' '#17becf'
    # in a window narrower than the picture (a laptop's) the page scales it down to fit, the
    # per-job columns at its right included: every rectangle where the scaled SVG puts it
    shoot r.html n.png $((w * 3 / 4 + 32)) 900
    python3 "$CHECK" pixels n.png r.svg 3 16
}
