# tmpdir.bash - the usual setup and teardown (`load helpers/tmpdir` after
# helpers/common): each test runs in its own $BATS_TEST_TMPDIR, and what
# cosched it started is cleaned up after it.

setup() {
    cd "$BATS_TEST_TMPDIR"
}

teardown() {
    cleanup_cosched
}
