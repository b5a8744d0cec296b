#!/usr/bin/env bats
# 16-characterize: the characterization protocol (lua/cosched/characterize.lua,
# paper 001 Sec. 4.4 with Sec. 3.1 and 6).  tests/lua/test_characterize.lua
# drives the module with deterministic fake snapshots (one LLC of 8 cores; 2
# packages x 2 LLCs x 4 cores; 4 cores x 2 hardware threads) and Table 2's
# bandwidths (tests/fixtures/table2.csv); here we run it and require every
# line of its TAP output to pass.  Pure Lua: needs only the lua5.4
# interpreter, no root, no build.

load helpers/common

setup() {
    lua_needed
}

# characterize CODE: run CODE with `ch` = require "cosched.characterize" from the source tree
characterize() {
    lua_with cosched.characterize ch "$1"
}

@test "characterize: every test of the Lua script passes" {
    lua_tap_all_ok tests/lua/test_characterize.lua
}

@test "characterize: every row of Table 2 is classified as the paper does" {
    run "$LUA" "$COSCHED_SRCDIR/tests/lua/test_characterize.lua" "$COSCHED_SRCDIR"
    echo "$output"
    table2_rows_pass "Table 2 " ": "
}

@test "characterize: a bad parameter is refused with its name and the accepted range" {
    characterize "ch.new{ phase_threshold = '-0.2' }"
    echo "status: $status"
    echo "output: $output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "characterize.new: phase_threshold must be a number > 0, got '-0.2'"
}

@test "characterize: an unknown parameter is refused, listing the accepted ones" {
    characterize "ch.new{ standalone_quantum = 2 }"
    echo "status: $status"
    echo "output: $output"
    [ "$status" -ne 0 ]
    assert_contains "$output" "characterize.new: unknown parameter 'standalone_quantum' (accepted: "
}
