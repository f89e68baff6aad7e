#!/usr/bin/env bash
# Kernel variants side by side on a GPU machine. A variant is either a prebuilt benchmark binary,
# NAME=BIN (a nesle-bench-gpu built from a worktree with a bench/variants patch applied, with the
# pinned nvcc as the wheel's kernels are; NAME=BIN@VAR=VALUE,... runs it with those environment
# settings, e.g. 166ps=bench-166@NESLE_STREAM=per-thread), or, without rebuilding, a copy DIR of kernels/ (with
# one change) compiled at run time through NESLE_KERNEL_SOURCE, optionally with NVRTC options
# after an `@` (DIR@OPTIONS, e.g. kernels@-DNESLE_PC_VOTE=1, given to NESLE_KERNEL_OPTIONS) and
# environment settings for its runs after a second `@`, comma separated (DIR@OPTIONS@VAR=VALUE,...,
# e.g. kernels@-DNESLE_PHASES=4@NESLE_BLOCK=512; options may be several, space separated, the spec
# then quoted: 'kernels@-DNESLE_PHASES=16 -DNESLE_SLACK=3'). Each variant is first checked for parity; one
# that fails is reported and skipped. Rounds alternate the variants so drift hits them alike;
# at the end, each variant's mean and its change against the first. Prints one line per run and
# writes nothing else.
# Write the prediction in docs/kernel-notes.md first; record what came out there afterwards.
#
#   bench/gpu_variants.sh [-r ROUNDS] [-e ENVS] [-p PROTOCOLS] [-w WARMUP] [-s STEPS] [-l LIMIT] [-F] [-m]
#                         VARIANT...
#   (PROTOCOLS: A, B and Bpix, protocol B with the 84x84 gray picture every step)
#   (LIMIT: seconds after which no round starts, for a machine that limits a command's time)
#   (-F: the full parity set instead of 16 envs x 10 steps of SMB: SMB with pictures, one-frame
#   steps with Start, Tetris and every test ROM; -m: compute-sanitizer memcheck too)
#   (e.g. kernels /tmp/v1 kernels@-DNESLE_PC_VOTE=1; or -F -m -w 30 -s 10 -p A,B,Bpix
#   main=/tmp/bench-main 101=/tmp/bench-101)
#
# Needs the SMB ROM (NESLE_ROM_DIR or the nesle cache); for DIR variants nesle-bench-gpu (BENCH,
# default target/release/nesle-bench-gpu) and libnvrtc on the library path (torch's
# nvidia/cu13/lib is added when torch is importable); with -F Tetris and the test ROMs
# (NESLE_TEST_ROMS, default ../shared/test-roms); with -m compute-sanitizer on PATH.
set -u
rounds=2 envs=65536 protocols=A,B warmup=2 steps=6 limit= full=0 memcheck=0
while getopts "r:e:p:w:s:l:Fm" o; do
  case $o in
    r) rounds=$OPTARG ;; e) envs=$OPTARG ;; p) protocols=$OPTARG ;; w) warmup=$OPTARG ;; s) steps=$OPTARG ;;
    l) limit=$OPTARG ;; F) full=1 ;; m) memcheck=1 ;; *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-e ENVS] [-p PROTOCOLS] [-w WARMUP] [-s STEPS] [-l LIMIT] [-F] [-m] VARIANT..." >&2; exit 2; }
B=${BENCH:-target/release/nesle-bench-gpu}
ROMS=${NESLE_ROM_DIR:-$HOME/.cache/nesle/roms}
SMB=$ROMS/super-mario-bros.nes TR=${NESLE_TEST_ROMS:-../shared/test-roms}
export NESLE_SYNC_TIMEOUT=${NESLE_SYNC_TIMEOUT:-120}
lib=$(python3 -c "import torch, pathlib; p = pathlib.Path(torch.__file__).parent.parent / 'nvidia'; print(':'.join(str(d) for d in p.glob('*/lib') if any(d.glob('libnvrtc.so*'))))" 2>/dev/null)
export LD_LIBRARY_PATH="${lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T0=$(date +%s)
# The command of variant $1: `pre` (its environment, through `env`) and `prog`, and its `name`
# in the output. NAME=BIN runs BIN as it is; DIR, OPTIONS and the settings of a DIR spec go to
# the run-time compile.
command_of() {
  local v=$1 d o e=()
  name=${v// /+}  # one word: the means below split the result lines on spaces
  if [[ ${v%%@*} == *=* ]]; then
    # NAME=BIN, or NAME=BIN@VAR=VALUE,... with settings for its runs.
    local bin=${v%%@*}
    name=${v%%=*} prog=("${bin#*=}")
    if [[ $v == *@* ]]; then IFS=, read -ra e <<< "${v#*@}"; fi
    pre=(env "${e[@]}")
    return
  fi
  d=${v%%@*} o=
  if [[ $v == *@* ]]; then o=${v#*@}; fi
  if [[ $o == *@* ]]; then IFS=, read -ra e <<< "${o#*@}"; o=${o%%@*}; fi
  pre=(env "${e[@]}" "NESLE_KERNEL_SOURCE=$d" "NESLE_KERNEL_OPTIONS=$o") prog=("$B")
}
# The parity runs of the variant whose command is set; true when every one is identical.
parity() {
  if [ $full = 0 ]; then
    timeout 300 "${pre[@]}" "${prog[@]}" --parity 16 --steps 10 --rom "$SMB" 2>&1 | tail -1 | grep -q "1 of 1 ROMs identical"
    return
  fi
  local ok=0 out args
  for args in "--parity 64 --steps 40 --pixels --rom $SMB" \
              "--parity 64 --steps 40 --frameskip 1 --press-start 40 --pixels --rom $SMB" \
              "--parity 64 --steps 20 --pixels --rom $ROMS/tetris.nes" \
              "--parity 8 --steps 4 --test-roms $TR"; do
    # $args unquoted: it splits into the words written above.
    out=$(timeout 300 "${pre[@]}" "${prog[@]}" $args 2>&1 | tail -1)
    echo "$name parity $args: $out"
    [[ $out =~ ([0-9]+)\ of\ ([0-9]+)\ ROMs\ identical && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] || ok=1
  done
  return $ok
}
ok=()
for v in "$@"; do
  command_of "$v"
  if parity; then
    ok+=("$v")
  else
    echo "$name: parity FAILED, skipped"
  fi
  if [ $memcheck = 1 ]; then
    # With pictures: the step kernel, the line renderer and the redraw all run.
    out=$(timeout 300 "${pre[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 "${prog[@]}" --parity 32 --steps 2 --pixels --rom "$SMB" 2>&1)
    echo "$name memcheck: rc=$? $(grep -h 'ERROR SUMMARY' <<< "$out" | tail -1)"
  fi
done
results=$(mktemp)
for r in $(seq "$rounds"); do
  [ -n "$limit" ] && [ $(($(date +%s) - T0)) -gt "$limit" ] && break
  for v in "${ok[@]}"; do
    command_of "$v"
    IFS=, read -ra ps <<< "$protocols"
    for p in "${ps[@]}"; do
      px=(); [ "$p" = Bpix ] && p=B px=(--pixels)
      # The table's rows only (with the bench's notes in brackets after the rate): the progress
      # lines on stderr start with the protocol too.
      timeout 300 "${pre[@]}" "${prog[@]}" --envs "$envs" --protocols "$p" "${px[@]}" --warmup "$warmup" --steps "$steps" --rom "$SMB" 2>&1 |
        awk -v d="$name" -v r="$r" '$1 ~ /^[AB]$/ && $4 ~ /^[0-9.]+$/ { i = index($0, "("); printf "round %s  %-24s %-4s %8s envs %12s env-steps/s%s\n", r, d, $1 ($3 == "true" ? "pix" : ""), $2, $4, i ? "  " substr($0, i) : "" }' |
        tee -a "$results"
    done
  done
done
# Each variant's mean over its rounds, and its change against the first variant's.
awk '{ k = $3 " " $4 " " $5; if (!(k in n)) order[++nk] = k; n[k]++; sum[k] += $7; if (first == "") first = $3 }
  END { for (i = 1; i <= nk; i++) {
    k = order[i]; split(k, f, " "); m = sum[k] / n[k]; b = first " " f[2] " " f[3]
    c = (f[1] != first && (b in n)) ? sprintf(" (%+.1f%%)", 100 * (m / (sum[b] / n[b]) - 1)) : ""
    printf "mean  %-24s %-4s %8s envs %12.0f env-steps/s%s\n", f[1], f[2], f[3], m, c } }' "$results"
rm -f "$results"
