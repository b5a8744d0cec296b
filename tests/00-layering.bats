#!/usr/bin/env bats
# 00-layering: the include arrows of launcher/ and plugin/ follow the layering
# table of docs/architecture.md (its one home; tests/helpers/layering.py reads
# it), the table has no circle, and the files keep to the size goals of issue
# 27 (a C file at most 1,000 lines, a header at most 200) but for the
# exceptions listed in layering.py, which only shrink.

load helpers/common
load helpers/tmpdir

layering() {
    run python3 "$COSCHED_SRCDIR/tests/helpers/layering.py" "$@"
    echo "layering.py $* -> status $status"
    echo "$output"
}

# a small tree: the real table, its folders, core/ and engine/ with a file or two
fake_tree() {
    mkdir -p tree/docs tree/plugin tree/launcher/{shared,omp,core,control,counters,policy,engine,local,node,sim,cli}
    touch tree/launcher/shared/envword.h tree/launcher/shared/omppage.h
    cp "$COSCHED_SRCDIR/docs/architecture.md" tree/docs/
    printf '#include "config.h"\n#include "core/log.h"\n' > tree/launcher/engine/engine.c
    printf '/* engine */\n' > tree/launcher/engine/engine.h
    printf '/* log */\n' > tree/launcher/core/log.h
    printf '#include "core/log.h"\n' > tree/launcher/core/log.c
}

@test "every #include of launcher/ and plugin/ is allowed by docs/architecture.md's layering table" {
    layering "$COSCHED_SRCDIR" includes
    [ "$status" -eq 0 ]
}

@test "the layering table has a row for every folder, names only what exists, and has no circle" {
    layering "$COSCHED_SRCDIR" table
    [ "$status" -eq 0 ]
}

@test "no C file over 1,000 lines and no header over 200 in launcher/ and plugin/ (but today's exceptions)" {
    layering "$COSCHED_SRCDIR" sizes
    [ "$status" -eq 0 ]
}

@test "every exception listed in tests/helpers/layering.py still applies (the list only shrinks)" {
    layering "$COSCHED_SRCDIR" stale
    [ "$status" -eq 0 ]
}

@test "layering: an include up a floor, a folder without a row, a missing header and a circle are found" {
    fake_tree
    layering tree includes
    [ "$status" -eq 0 ]
    layering tree table
    [ "$status" -eq 0 ]

    printf '#include "engine/engine.h"\n' >> tree/launcher/core/log.c
    layering tree includes
    [ "$status" -eq 1 ]
    assert_contains "$output" "launcher/core/log.c:2: includes launcher/engine/engine.h, but launcher/core may include only launcher/shared"

    mkdir tree/launcher/extra
    printf '#include "core/nosuch.h"\n' > tree/launcher/extra/extra.c
    layering tree includes
    [ "$status" -eq 1 ]
    assert_contains "$output" 'launcher/extra/extra.c:1: includes "core/nosuch.h", which is no file of the tree'
    printf '#include "core/log.h"\n' > tree/launcher/extra/extra.c
    layering tree includes
    [ "$status" -eq 1 ]
    assert_contains "$output" "launcher/extra/extra.c:1: folder launcher/extra has no row in the layering table"
    layering tree table
    [ "$status" -eq 1 ]
    assert_contains "$output" "layering table: no row for launcher/extra"

    sed -i 's#^| launcher/core     | launcher/shared #| launcher/core     | launcher/engine #' tree/docs/architecture.md
    layering tree table
    [ "$status" -eq 1 ]
    assert_contains "$output" "layering table has a circle: launcher/core -> launcher/engine -> launcher/core"
}

@test "sizes: a C file over 1,000 lines and a header over 200 are found" {
    fake_tree
    seq 1001 | sed 's#^#// #' > tree/launcher/engine/step.c
    seq 201 | sed 's#^#// #' > tree/launcher/core/log.h
    layering tree sizes
    [ "$status" -eq 1 ]
    assert_contains "$output" "launcher/engine/step.c: 1001 lines (goal: at most 1000 for a C file)"
    assert_contains "$output" "launcher/core/log.h: 201 lines (goal: at most 200 for a header)"
}
