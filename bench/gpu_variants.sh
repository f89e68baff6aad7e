#!/usr/bin/env bash
# Kernel variants side by side on a GPU machine, without rebuilding: each DIR is a copy of
# kernels/ (with one change), compiled at run time through NESLE_KERNEL_SOURCE, optionally with
# NVRTC options after an `@` (DIR@OPTIONS, e.g. kernels@-DNESLE_PC_VOTE=1, given to
# NESLE_KERNEL_OPTIONS) and environment settings for its runs after a second `@`, comma
# separated (DIR@OPTIONS@VAR=VALUE,..., e.g. kernels@-DNESLE_PHASES=4@NESLE_BLOCK=512);
# rounds alternate the variants so drift hits them alike. Prints one line per run and writes
# nothing else.
# Write the prediction in docs/kernel-notes.md first; record what came out there afterwards.
#
#   bench/gpu_variants.sh [-r ROUNDS] [-e ENVS] [-p PROTOCOLS] [-w WARMUP] [-s STEPS] DIR[@OPTIONS]...
#   (PROTOCOLS: A, B and Bpix, protocol B with the 84x84 gray picture every step)
#   (e.g. kernels /tmp/v1 kernels@-DNESLE_PC_VOTE=1)
#
# Needs nesle-bench-gpu (BENCH, default target/release/nesle-bench-gpu), the SMB ROM
# (NESLE_ROM_DIR or the nesle cache) and libnvrtc on the library path (torch's nvidia/cu13/lib
# is added when torch is importable). Each variant is first checked for parity (16 envs x 10
# steps); a variant that fails it is reported and skipped.
set -u
rounds=2 envs=65536 protocols=A,B warmup=2 steps=6
while getopts "r:e:p:w:s:" o; do
  case $o in r) rounds=$OPTARG ;; e) envs=$OPTARG ;; p) protocols=$OPTARG ;; w) warmup=$OPTARG ;; s) steps=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-e ENVS] [-p PROTOCOLS] [-w WARMUP] [-s STEPS] DIR[@OPTIONS]..." >&2; exit 2; }
B=${BENCH:-target/release/nesle-bench-gpu}
SMB=${NESLE_ROM_DIR:-$HOME/.cache/nesle/roms}/super-mario-bros.nes
lib=$(python3 -c "import torch, pathlib; p = pathlib.Path(torch.__file__).parent.parent / 'nvidia'; print(':'.join(str(d) for d in p.glob('*/lib') if any(d.glob('libnvrtc.so*'))))" 2>/dev/null)
export LD_LIBRARY_PATH="${lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# DIR, OPTIONS and the environment settings (as `env` arguments) of a variant spec.
split() {
  d=${1%%@*} o= e=()
  if [[ $1 == *@* ]]; then o=${1#*@}; fi
  if [[ $o == *@* ]]; then IFS=, read -ra e <<< "${o#*@}"; o=${o%%@*}; fi
}
ok=()
for v in "$@"; do
  split "$v"
  if env "${e[@]}" NESLE_KERNEL_SOURCE=$d NESLE_KERNEL_OPTIONS=$o timeout 300 "$B" --parity 16 --steps 10 --rom "$SMB" 2>&1 | tail -1 | grep -q "1 of 1 ROMs identical"; then
    ok+=("$v")
  else
    echo "$v: parity FAILED, skipped"
  fi
done
for r in $(seq "$rounds"); do
  for v in "${ok[@]}"; do
    split "$v"
    IFS=, read -ra ps <<< "$protocols"
    for p in "${ps[@]}"; do
      px=(); [ "$p" = Bpix ] && p=B px=(--pixels)
      env "${e[@]}" NESLE_KERNEL_SOURCE=$d NESLE_KERNEL_OPTIONS=$o timeout 300 "$B" --envs "$envs" --protocols "$p" "${px[@]}" --warmup "$warmup" --steps "$steps" --rom "$SMB" 2>&1 |
        awk -v d="$v" -v r="$r" '$1 ~ /^[AB]$/ { printf "round %s  %-24s %-4s %8s envs %12s env-steps/s\n", r, d, $1 ($3 == "true" ? "pix" : ""), $2, $4 }'
    done
  done
done
