#!/usr/bin/env bash
# Diverging envs over long steps, in the block sizes and env counts where #187's barrier hung
# (kernel-notes "The pair hangs", "Fix H hangs too"): bench/long_steps.py under a time limit,
# one line per case (`pass` with the CPU's results, `HANG` at the step it stopped in, or the
# error), on the installed nesle's kernels or, with KERNELS=DIR (a copy of kernels/ with a
# variant applied), on DIR compiled at run time, with OPTIONS as its NVRTC options (e.g.
# -DNESLE_SLACK=2 with the patch of kernel-notes #189). Exits 1 if a case failed.
#
#   [KERNELS=DIR] [OPTIONS=...] bench/diverging_checks.sh [ROM]
set -u
ROM=${1:-${NESLE_ROM_DIR:-$HOME/.cache/nesle/roms}/super-mario-bros.nes}
export NESLE_SYNC_TIMEOUT=${NESLE_SYNC_TIMEOUT:-20}
[ -n "${KERNELS:-}" ] && export NESLE_KERNEL_SOURCE=$KERNELS NESLE_KERNEL_OPTIONS=${OPTIONS:-}
here=$(dirname "$0")
failed=0
# case ENVS FRAMES BLOCK [--no-render] [--check]
case_() {
  local envs=$1 frames=$2 block=$3; shift 3
  local out; out=$(NESLE_BLOCK=${block#default} timeout $((NESLE_SYNC_TIMEOUT + 30)) \
    python3 "$here/long_steps.py" "$ROM" "$envs" "$frames" "$@" 2>&1)
  local rc=$? steps; steps=$(grep -c '^step' <<< "$out")
  local what=pass
  if [ $rc -ne 0 ]; then
    failed=1
    if grep -q TimeoutError <<< "$out" || [ $rc -eq 124 ]; then what="HANG in step $steps"
    else what="FAILED after $steps steps: $(tail -1 <<< "$out" | cut -c1-120)"; fi
  fi
  printf '%-6s envs, %2s frames a step, block %-7s %-22s %s\n' "$envs" "$frames" "$block" "$*" "$what"
}
case_ 24 30 default --check
case_ 24 30 32 --check
case_ 24 30 64 --check
case_ 24 30 default --no-render --check
case_ 24 4 32 --check
case_ 8 30 32 --check
case_ 32 30 32 --check
case_ 300 30 512 --check
case_ 300 30 default
case_ 4096 30 default
exit $failed
