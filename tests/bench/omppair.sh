#!/bin/bash
# omppair.sh - region throughput as a progress signal without a PMU (BENCHMARKS.md section 12a):
# share/demo/stream (job 1) folded onto one core by tft (1 s quanta) beside another stream, beside
# share/demo/compute, and alone with 1 thread; outermost regions per second (and per CPU-second) from the
# trace's omp_regions, steps after the first.  From the build tree, as root, under the CPU lock:
#   bash tests/bench/omppair.sh
set -eu
[ -x ./cosched ] && [ -x share/demo/stream ] || { echo "omppair.sh: run it from the build tree" >&2; exit 2; }
export COSCHED_DATADIR=${COSCHED_DATADIR:-$PWD}
tr=$(mktemp)
trap 'rm -f "$tr"' EXIT
echo "pair start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2 3; do
  for other in stream compute; do
    ./cosched run -q --policy tft --quantum 1s --trace "$tr" -- share/demo/stream -s 6 -q ::: share/demo/$other -s 7 >/dev/null 2>&1
    jq -r 'select(.type == "step") | (.end - .start) as $w | .jobs[] | select(.id == 1) | "\($w) \(.cpu_s) \(.omp_regions // 0) \(.omp_team // 0)"' "$tr" |
      awk -v o=$other -v r=$r 'NR > 1 { w += $1; c += $2; n += $3 } END { printf "run %d stream beside %s: %.1f regions/s, %.1f regions per cpu-s (%d regions, %.2f s, %.2f cpu-s)\n", r, o, n / w, n / c, n, w, c }'
  done
done
# alone: 1 thread under gang (the other core idle)
for r in 1 2 3; do
  OMP_NUM_THREADS=1 ./cosched run -q --policy gang --quantum 1s --trace "$tr" -- share/demo/stream -s 6 -q >/dev/null 2>&1
  jq -r 'select(.type == "step") | (.end - .start) as $w | .jobs[] | select(.id == 1) | "\($w) \(.cpu_s) \(.omp_regions // 0)"' "$tr" |
    awk -v r=$r 'NR > 1 { w += $1; c += $2; n += $3 } END { printf "run %d stream alone, 1 thread: %.1f regions/s, %.1f per cpu-s\n", r, n / w, n / c }'
done
echo "pair done $(date -u +%T)"
