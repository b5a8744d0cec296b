#!/usr/bin/env bats
# 15-scn: the SCN classifier (lua/cosched/scn.lua, paper 001 Sec. 3, Fig. 3).
# The Lua script tests/lua/test_scn.lua reproduces Table 2 of the paper from
# tests/fixtures/table2.csv and checks edge cases; here we run it and check each
# refused input's message through the interpreter directly.  Pure Lua: needs
# only the lua5.4 interpreter, no root, no build.

load helpers/common

setup() {
    lua_needed
}

# scn CODE: run CODE with `scn` = require "cosched.scn" from the source tree
scn() {
    lua_with cosched.scn scn "$1"
}

# refused CODE MESSAGE: CODE raises an error whose message contains MESSAGE
refused() {
    scn "$1"
    echo "status: $status"
    echo "output: $output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "$2"
}

@test "scn: all 19 applications of Table 2 get the paper's class" {
    run "$LUA" "$COSCHED_SRCDIR/tests/lua/test_scn.lua" "$COSCHED_SRCDIR"
    echo "$output"
    # exactly "ok N - app": a failing row prints "not ok N - app: got X want Y ..."
    table2_rows_pass "" '$'
}

@test "scn: the whole Lua test script passes (reuse factors, zero traffic, thresholds, sandbox)" {
    lua_tap_all_ok tests/lua/test_scn.lua
}

@test "scn: a class comes with its reuse factors and reason" {
    scn 'local c, d = scn.classify{bw_l1 = 20.667, bw_l2 = 4.131, bw_llc = 1.916, ncores = 8}
         print(c, string.format("%.2f %.2f", d.reuse.l2, d.reuse.llc), d.reason)'
    echo "$output"
    [ "$status" -eq 0 ]
    assert_contains "$output" "N	5.00 2.16	reuse higher in the private L2"
}

@test "scn: non-number bandwidth is refused, naming the field" {
    refused "scn.classify{bw_l1 = 1, bw_l2 = 'x', bw_llc = 1, ncores = 8}" \
        "scn.classify: bw_l2 must be a non-negative number, got 'x'"
}

@test "scn: negative bandwidth is refused, naming the field" {
    refused "scn.classify{bw_l1 = -1, bw_l2 = 1, bw_llc = 1, ncores = 8}" \
        "scn.classify: bw_l1 must be a non-negative number, got '-1'"
}

@test "scn: missing bandwidth is refused, naming the field" {
    refused "scn.classify{bw_l1 = 1, bw_l2 = 1, ncores = 8}" \
        "scn.classify: bw_llc must be a non-negative number, got 'nil'"
}

@test "scn: NaN and infinite bandwidths are refused" {
    refused "scn.classify{bw_l1 = 0/0, bw_l2 = 1, bw_llc = 1, ncores = 8}" \
        "scn.classify: bw_l1 must be a non-negative number, got '"
    refused "scn.classify{bw_l1 = 1, bw_l2 = 1, bw_llc = math.huge, ncores = 8}" \
        "scn.classify: bw_llc must be a non-negative number, got 'inf'"
}

@test "scn: zero or missing ncores is refused" {
    refused "scn.classify{bw_l1 = 1, bw_l2 = 1, bw_llc = 1, ncores = 0}" \
        "scn.classify: ncores must be a positive number, got '0'"
    refused "scn.classify{bw_l1 = 1, bw_l2 = 1, bw_llc = 1}" \
        "scn.classify: ncores must be a positive number, got 'nil'"
}

@test "scn: a measurement that is not a table is refused" {
    refused "scn.classify(42)" "scn.classify: measurement must be a table, got '42'"
}

@test "scn: bad options are refused, naming the option" {
    refused "scn.classify({bw_l1 = 1, bw_l2 = 1, bw_llc = 1, ncores = 8}, {reuse_threshold = 0})" \
        "scn.classify: reuse_threshold must be a positive number, got '0'"
    refused "scn.classify({bw_l1 = 1, bw_l2 = 1, bw_llc = 1, ncores = 8}, {l1_activity = 'low'})" \
        "scn.classify: l1_activity must be a non-negative number, got 'low'"
    refused "scn.classify({bw_l1 = 1, bw_l2 = 1, bw_llc = 1, ncores = 8}, {l1_activty = 0.1})" \
        "scn.classify: unknown option 'l1_activty'"
}

@test "scn: scn.reuse refuses bad input under its own name" {
    refused "scn.reuse{bw_l1 = 1, bw_l2 = {}, bw_llc = 1}" \
        "scn.reuse: bw_l2 must be a non-negative number, got 'table: "
}
