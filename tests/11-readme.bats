#!/usr/bin/env bats
# 11-readme: README's "Using it" examples, run exactly as printed (issue 16:
# "the README examples are run by the test suite").  The block is read from
# README.md itself, so an example that changes is tested as it now reads.
# They run in a copy of the built share/demo (the first line is its `cd`),
# with the build's cosched first on PATH and COSCHED_DATADIR at the source
# tree - what an installed cosched finds by itself.  Each line must exit 0.
# Not run here: the Slurm block (its batch script asks for 8 cores per step;
# the plugin and engine are tier 60-63's) and the quick start (that is CI).

load helpers/common

setup() {
    requires cosched
    cd "$BATS_TEST_TMPDIR"
    mkdir share
    cp -r "$DEMO" share/demo
    cp "$COSCHED_SRCDIR/share/demo/demo.jobs" share/demo/
}

teardown() {
    cleanup_cosched
}

# readme_block HEADING: the lines of README's first ```sh block after the line
# "## HEADING", comments kept (bash ignores them)
readme_block() {
    awk -v h="## $1" 'index($0, h) == 1 {s = 1} s == 1 && /^```sh/ {s = 2; next} s == 2 && /^```/ {exit} s == 2' \
        "$COSCHED_SRCDIR/README.md"
}

# run_block NAME [WHERE]: eval each line of $BATS_TEST_TMPDIR/NAME.sh in this
# shell (its cd and exports stay), stdin from /dev/null, the output of line N
# in $BATS_TEST_TMPDIR/NAME.N; a line that exits non-zero fails the test,
# naming WHERE the line is printed (default README) and with its output
run_block() {
    local n=0 line st T=$BATS_TEST_TMPDIR
    while IFS= read -r line; do
        n=$((n + 1))
        st=0
        eval "$line" > "$T/$1.$n" 2>&1 < /dev/null || st=$?
        [ "$st" = 0 ] || { echo "${2:-README} line $n: $line"; echo "exit $st; output:"; cat "$T/$1.$n"; false; } >&2
    done < "$T/$1.sh"
}

@test "README's 'Using it' block runs as printed, line by line, each exiting 0" {
    local T=$BATS_TEST_TMPDIR
    readme_block "Using it" > block.sh
    [ "$(wc -l < block.sh)" -ge 8 ] || { echo "README's block has $(wc -l < block.sh) lines; the awk lost it?" >&2; false; }
    head -1 block.sh | grep -q '^cd share/demo' || { echo "first line: $(head -1 block.sh)" >&2; false; }
    export PATH="$COSCHED_BUILDDIR:$PATH" COSCHED_DATADIR="$COSCHED_SRCDIR"
    run_block block
    # and they did what they say
    check() {  # check PATTERN-OF-LINE GREP-IN-ITS-OUTPUT [COUNT]
        local k
        k=$(grep -n -- "$1" "$T/block.sh" | head -1 | cut -d: -f1)
        [ -n "$k" ] || { echo "no README line matches '$1'" >&2; return 1; }
        [ "$(grep -c -- "$2" "$T/block.$k")" -ge "${3:-1}" ] ||
            { echo "README line $k ($1): want '$2' ${3:-1} time(s) in its output:"; cat "$T/block.$k"; false; } >&2
    }
    check ':::' 'exit 0$' 3
    check 'jobs demo.jobs --trace' 'exit 0$' 3
    check 'window 20' 'exit 0\|cut by the window' 3
    check '-p gang -t 250ms -c 0' 'policy gang, quantum 0.25 s, cpus 0 (1 core(s))'
    check 'topology --json' '"cores"'
    check 'synthetic:pack:2' '2 package(s), 32 core(s)'
    check 'cosched policies' 'flca'
    check 'classify' 'class'
    check 'replay:rec.jsonl' 'exit 0$'
    cd "$T/share/demo"
    [ -s run.jsonl ] || { echo "no trace run.jsonl in $PWD" >&2; false; }
    python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' run.jsonl
    # the report line drew that trace and wrote its table (one line per job)
    grep -q '<svg' run.html || { echo "no picture in run.html" >&2; false; }
    [ "$(wc -l < run.csv)" -eq 4 ] || { echo "run.csv:"; cat run.csv; false; } >&2
    [ -s rec.jsonl ] || { echo "no recording rec.jsonl in $PWD" >&2; false; }
}

@test "README's 'first ten minutes' runs as printed (from the top of a built tree) and draws its picture" {
    readme_block "The first ten minutes" > ten.sh
    [ "$(wc -l < ten.sh)" -ge 3 ] || { echo "README's block has $(wc -l < ten.sh) lines" >&2; false; }
    ln -s "$COSCHED" cosched     # the top of the tree: ../../cosched from share/demo
    export COSCHED_DATADIR="$COSCHED_SRCDIR"
    run_block ten
    cd "$BATS_TEST_TMPDIR/share/demo"
    grep -q '<svg' first.html || { echo "no picture in first.html" >&2; false; }
    grep -q 'data-state="folded"' first.html || { echo "tft folded nobody?" >&2; false; }
    [ -f "$COSCHED_SRCDIR/docs/first-run.svg" ] || { echo "README's picture docs/first-run.svg is missing" >&2; false; }
}

# cosched(1) EXAMPLES (issue 16 item 1: the man page's first example failed
# with the shipped demo programs): every line, as printed, in the demo folder
# the page says they run in.
@test "cosched(1) EXAMPLES run as printed in the demo folder, each exiting 0" {
    local T=$BATS_TEST_TMPDIR
    # the lines between .nf and .fi after .SH EXAMPLES, roff's \- as -
    awk '/^\.SH EXAMPLES/ {s = 1} s == 1 && /^\.nf/ {s = 2; next} s == 2 && /^\.fi/ {exit} s == 2' \
        "$COSCHED_SRCDIR/share/man/cosched.1" | sed 's/\\-/-/g' > examples.sh
    [ "$(wc -l < examples.sh)" -ge 4 ] || { echo "cosched(1) EXAMPLES: $(cat examples.sh)" >&2; false; }
    export PATH="$COSCHED_BUILDDIR:$PATH" COSCHED_DATADIR="$COSCHED_SRCDIR"
    cd share/demo
    run_block examples "cosched(1) EXAMPLES"
    # the first co-schedules the three kernels, and each ends well
    [ "$(grep -c 'exit 0$' "$T/examples.1")" -eq 3 ] || { echo "line 1: $(head -1 "$T/examples.sh")"; cat "$T/examples.1"; false; } >&2
    grep -q '<svg' run.html
    [ "$(wc -l < run.csv)" -eq 4 ] || { echo "run.csv:"; cat run.csv; false; } >&2
}
