# standalone.bash - the test helpers (common.bash, slurm.bash) for scripts
# that run outside bats, such as the benchmarks in tests/bench/:
#
#   . "$(dirname "$0")/../helpers/standalone.bash"
#
# Sets and exports COSCHED_SRCDIR (the source tree above this file) and
# COSCHED_BUILDDIR (the current directory unless set: run from the build
# tree), stands in for bats' skip (a message, exit 0) and loads both helpers.
COSCHED_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COSCHED_BUILDDIR=${COSCHED_BUILDDIR:-$PWD}
export COSCHED_SRCDIR COSCHED_BUILDDIR
skip() { echo "skip: $*" >&2; exit 0; }
BATS_FILE_TMPDIR=
# shellcheck source=common.bash
. "$COSCHED_SRCDIR/tests/helpers/common.bash"
# shellcheck source=slurm.bash
. "$COSCHED_SRCDIR/tests/helpers/slurm.bash"
