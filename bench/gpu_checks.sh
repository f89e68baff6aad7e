#!/usr/bin/env bash
# The GPU checks to run whenever the kernels change, on a machine with a CUDA GPU:
# parity (nesle-bench-gpu vs nes-core), the NVRTC images, compute-sanitizer, the Python GPU
# tests, and the throughput protocols (docs/benchmarks/README.md). Results go to $OUT (default
# ./gpu-checks); each step has a time limit, so one stuck step cannot hang the rest.
#
#   bench/gpu_checks.sh [path/to/nesle-bench-gpu]
#
# Needs: nesle installed with kernels, the game ROMs (NESLE_ROM_DIR or the nesle cache: SMB and
# Tetris, and for pytest's boot tests Zelda and Contra too, which a machine without internet
# cannot fetch), the test ROMs (NESLE_TEST_ROMS, default ../shared/test-roms), the test
# dependencies (`nesle[test]`, cynes among them) for pytest, compute-sanitizer on PATH for the
# sanitizer steps. Each step's exit status is appended to its output file (`rc=N`); the script
# lists the steps that failed (a mismatch, a sanitizer's error, a time limit, a binary that did
# not start) at the end and then exits 1, so a caller cannot mistake a broken run for a clean one.
# WU / ST (warm-up / timed steps, default 5 / 30) shorten the throughput runs.
# PARTS (default "checks,pytest,bench,python") picks the groups: the checks (demo, parity,
# images, sanitizers), `pytest -m gpu` (allowed 10 minutes: where a command may run no longer,
# give it a command of its own), the throughput table, the Python-layer comparison; "divergence"
# (not in the default) runs protocol B with the PC votes and regrouping (docs/kernel-notes.md #20, #21):
# ENVS_DIV envs (65536), WU_DIV + ST_DIV steps (30 + 25), kernels compiled at run time;
# "profile" (not in the default) asks ncu for the threads active per instruction, the stall
# reasons, occupancy and cache hit rates of one protocol A and one protocol B launch late in an
# episode (the first frame of step PROFILE_STEP, default 30; B's later steps weigh more in the
# full protocol: 200 is its last) at 65,536 envs; "source" (not in the default) takes ncu's
# per-instruction counters of one A and one B launch of the same step (ENVS_SRC envs, default
# 8,192; at 4,096 each warp runs alone on its scheduler) and, with the build's fatbin next to the
# benchmark binary (or NESLE_FATBIN) and cuobjdump/nvdisasm on PATH, or an sm_90 cubin of the
# same kernels and nvcc (NESLE_CUBIN) and nvdisasm, sums them per device function
# (bench/sass_profile.py).
set -u
B=${1:-target/release/nesle-bench-gpu}
OUT=${OUT:-gpu-checks}
mkdir -p "$OUT"
ROMS=${NESLE_ROM_DIR:-$HOME/.cache/nesle/roms}
TR=${NESLE_TEST_ROMS:-../shared/test-roms}
SMB=$ROMS/super-mario-bros.nes
export NESLE_SYNC_TIMEOUT=${NESLE_SYNC_TIMEOUT:-120}
T0=$(date +%s)
step() { echo "[+$(( $(date +%s) - T0 ))s] $1"; }
PARTS=,${PARTS:-checks,pytest,bench,python},
PS=${PROFILE_STEP:-30}  # the step "profile" and "source" take their launch from
part() { [[ $PARTS == *,$1,* ]]; }
# check NAME FILE LINES SECONDS CMD...: runs CMD under `timeout SECONDS` with its output in FILE,
# shows FILE's last LINES lines, and counts a non-zero exit as a failed check: a mismatch, a
# sanitizer's error (--error-exitcode), a step past its time, a binary that could not start. The
# script ends with the failed checks listed and exits 1 if there were any.
failed=()
check() {
  local name=$1 file=$2 lines=$3 secs=$4
  shift 4
  timeout "$secs" "$@" > "$file" 2>&1
  local rc=$?
  echo "rc=$rc" >> "$file"
  tail -n "$((lines + 1))" "$file"
  if [ $rc -ne 0 ]; then failed+=("$name (rc=$rc)"); fi
}

if part checks; then

step demo; check demo "$OUT/demo.txt" 6 120 python3 -m nesle demo --out "$OUT/mario.png"
step "parity SMB"; check "parity SMB" "$OUT/parity-smb.txt" 1 120 "$B" --parity 64 --steps 40 --rom "$SMB"
step "parity SMB, one-frame steps, Start at random (the Python tests' boot)"
check "parity SMB, Start" "$OUT/parity-smb-start.txt" 1 120 "$B" --parity 64 --steps 40 --frameskip 1 --press-start 40 --rom "$SMB"
step "parity SMB, envs in a new random order every step (Batch::set_order)"
check "parity SMB, orders" "$OUT/parity-smb-order.txt" 1 120 "$B" --parity 64 --steps 20 --regroup 1 --rom "$SMB"
step "parity SMB, regrouped every step by the host sort (BatchConfig::regroup_on_device off)"
check "parity SMB, host sort" "$OUT/parity-smb-host-sort.txt" 1 120 "$B" --parity 64 --steps 20 --regroup-on-host --rom "$SMB"
step "parity SMB, 300 envs in blocks of 256 (the frame's block barriers with a partial block)"
check "parity SMB, blocks of 256" "$OUT/parity-smb-block256.txt" 1 120 env NESLE_BLOCK=256 "$B" --parity 300 --steps 10 --rom "$SMB"
step "parity SMB, 600 envs in blocks of 512 (the default for large batches, with a partial block)"
check "parity SMB, blocks of 512" "$OUT/parity-smb-block512.txt" 1 120 env NESLE_BLOCK=512 "$B" --parity 600 --steps 10 --rom "$SMB"
step "parity SMB with pictures: drawn line by line after the frame (BatchConfig::draw_lines, the default), and while it runs"
check "parity SMB, pictures" "$OUT/parity-smb-pixels.txt" 1 120 "$B" --parity 64 --steps 40 --pixels --rom "$SMB"
check "parity SMB, pictures, Start" "$OUT/parity-smb-pixels-start.txt" 1 120 "$B" --parity 64 --steps 40 --frameskip 1 --press-start 40 --pixels --rom "$SMB"
check "parity SMB, pictures in the frame" "$OUT/parity-smb-pixels-in-frame.txt" 1 120 "$B" --parity 64 --steps 40 --pixels --draw-in-frame --rom "$SMB"
check "parity test ROMs, pictures" "$OUT/parity-roms-pixels.txt" 1 150 "$B" --parity 8 --steps 4 --pixels --test-roms "$TR"
step "parity SMB with pictures and their RGB (Batch::rgb against nes-core's palette)"
check "parity SMB, RGB" "$OUT/parity-smb-rgb.txt" 1 120 "$B" --parity 64 --steps 20 --rgb --rom "$SMB"
step "parity Tetris"; check "parity Tetris" "$OUT/parity-tetris.txt" 1 60 "$B" --parity 64 --steps 20 --rom "$ROMS/tetris.nes"
step "parity test ROMs"; check "parity test ROMs" "$OUT/parity-roms.txt" 1 150 "$B" --parity 8 --steps 4 --test-roms "$TR"
for im in sm_90 compute_75; do
  step "image $im"; check "image $im" "$OUT/image-$im.txt" 1 60 env NESLE_KERNEL_IMAGE=$im "$B" --parity 16 --steps 5 --rom "$SMB"
done
for tool in memcheck racecheck; do
  # With pictures and their RGB: the step kernel, the line renderer, the redraw and the RGB kernel run.
  step "$tool"; check "$tool" "$OUT/$tool.txt" 1 120 compute-sanitizer --tool $tool --error-exitcode 9 "$B" --parity 32 --steps 2 --rgb --rom "$SMB"
  # 2,048 envs: the device sort over two tiles, so its stages between tiles run too.
  check "$tool, the sort's tiles" "$OUT/$tool-sort.txt" 1 180 compute-sanitizer --tool $tool --error-exitcode 9 "$B" --envs 2048 --protocols B --warmup 1 --steps 2 --rom "$SMB"
done
step synccheck  # the block barriers in nes_run_frame, with a partial block
check "synccheck, blocks of 256" "$OUT/synccheck.txt" 1 120 env NESLE_BLOCK=256 compute-sanitizer --tool synccheck --error-exitcode 9 "$B" --parity 300 --steps 1 --rom "$SMB"
check "synccheck, blocks of 512" "$OUT/synccheck-512.txt" 1 120 env NESLE_BLOCK=512 compute-sanitizer --tool synccheck --error-exitcode 9 "$B" --parity 600 --steps 1 --rom "$SMB"
fi
if part pytest; then
step "pytest -m gpu"; check "pytest -m gpu" "$OUT/pytest-gpu.txt" 15 600 python3 -m pytest -q -m gpu tests/python -p no:cacheprovider --durations=10
fi
if part bench; then
step "A"; check "bench A" "$OUT/bench-A.txt" 6 300 "$B" --envs 1,4096,16384,65536,131072 --protocols A --warmup "${WU:-5}" --steps "${ST:-30}" --out "$OUT/bench-A.json"
step "B"; check "bench B" "$OUT/bench-B.txt" 5 300 "$B" --envs 4096,16384,65536,131072 --protocols B --warmup "${WU:-5}" --steps "${ST:-30}" --out "$OUT/bench-B.json"
step "B+pixels"; check "bench B+pixels" "$OUT/bench-Bpix.txt" 3 300 "$B" --envs 4096,65536 --protocols B --pixels --warmup "${WU:-5}" --steps "${ST:-30}" --out "$OUT/bench-Bpix.json"
step "B+pixels, full RGB"; check "bench B+RGB" "$OUT/bench-Brgb.txt" 3 300 "$B" --envs 4096,65536 --protocols B --rgb --warmup "${WU:-5}" --steps "${ST:-30}" --out "$OUT/bench-Brgb.json"
fi
if part python; then
step "Python layer (raw batch and make_vec, alternating)"
check "Python layer" "$OUT/py.txt" 40 400 python3 -m nesle bench --backend cuda --protocol B --envs 4096 65536 --warmup 3 --steps 20 --compare-env --rounds 2 --json "$OUT/py-layer.json"
fi
if part divergence; then
  step "divergence: PC votes x regrouping, protocol B"
  lib=$(python3 -c "import torch, pathlib; p = pathlib.Path(torch.__file__).parent.parent / 'nvidia'; print(':'.join(str(d) for d in p.glob('*/lib') if any(d.glob('libnvrtc.so*'))))" 2>/dev/null)
  # Most telling first, so a cut-off run still answers: base, vote, vote + regrouping, ...
  for vr in 0:0 1:0 1:10 2:10 0:10 2:0; do
    vote=${vr%:*} rg=${vr#*:}
    NESLE_KERNEL_SOURCE=kernels NESLE_KERNEL_OPTIONS=-DNESLE_PC_VOTE=$vote LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      timeout 200 "$B" --envs "${ENVS_DIV:-65536}" --protocols B --warmup "${WU_DIV:-30}" --steps "${ST_DIV:-25}" --regroup $rg \
      --rom "$SMB" --out "$OUT/div-vote$vote-regroup$rg.json" > "$OUT/div-vote$vote-regroup$rg.txt" 2>&1
    echo "vote $vote regroup $rg: $(grep -E '^ +B ' "$OUT/div-vote$vote-regroup$rg.txt" || tail -1 "$OUT/div-vote$vote-regroup$rg.txt")"
  done
fi
if part profile; then
  # Where a launch's time goes, lockstep (A) against diverged (B), one launch each late in the episode.
  for p in A B; do
    # B runs a launch a frame (4 a step); A, once its order settles, one a step (#175).
    skip=$((4 * PS)); [ $p = A ] && skip=$PS
    step "ncu: one $p launch late in the episode (after ${skip} launches), 65,536 envs"
    timeout 250 ncu -k nesle_step --launch-skip $skip --launch-count 1 --section WarpStateStats --section LaunchStats \
      --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis \
      --metrics "smsp__thread_inst_executed_per_inst_executed.ratio,smsp__inst_executed.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      "$B" --envs 65536 --protocols $p --warmup $((PS + 1)) --steps 1 --rom "$SMB" > "$OUT/ncu-$p.txt" 2>&1
    grep -q "==ERROR==" "$OUT/ncu-$p.txt" && cat "$OUT/ncu-$p.txt" | head -5
    grep -E "thread_inst_executed_per|inst_executed.sum|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|stalled|Hit Rate|Duration|Issued Warp" "$OUT/ncu-$p.txt"
  done
fi
if part source; then
  for p in A B; do
    skip=$((4 * PS)); [ $p = A ] && skip=$PS  # as in "profile"
    step "ncu source counters: one $p launch late in the episode (after ${skip} launches), ${ENVS_SRC:-8192} envs"
    timeout 200 ncu -k nesle_step --launch-skip $skip --launch-count 1 --section SourceCounters --import-source no -f \
      -o "$OUT/src-$p" "$B" --envs ${ENVS_SRC:-8192} --protocols $p --warmup $((PS + 1)) --steps 1 --rom "$SMB" > "$OUT/src-$p.log" 2>&1
    timeout 120 ncu -i "$OUT/src-$p.ncu-rep" --page source --csv --print-source sass > "$OUT/src-$p.csv" 2>> "$OUT/src-$p.log"
    tail -2 "$OUT/src-$p.log"
  done
  # The sm_90 code the counters ran: NESLE_CUBIN, or taken out of the build's fatbin.
  CUBIN=${NESLE_CUBIN:-}
  FATBIN=${NESLE_FATBIN:-$(dirname "$B")/nesle.fatbin}
  if [ -z "$CUBIN" ] && [ -f "$FATBIN" ] && command -v cuobjdump > /dev/null; then
    mkdir -p "$OUT/cubin" && (cd "$OUT/cubin" && cuobjdump -xelf sm_90 "$(realpath "$FATBIN")" > /dev/null)
    CUBIN=$(ls "$OUT"/cubin/*.cubin | head -1)
  fi
  if [ -n "$CUBIN" ] && command -v nvdisasm > /dev/null; then
    nvdisasm -c "$CUBIN" > "$OUT/sass-sm_90.txt"
    for p in A B; do
      python3 bench/sass_profile.py "$OUT/src-$p.csv" "$OUT/sass-sm_90.txt" --calls > "$OUT/functions-$p.txt" 2>&1
      echo "protocol $p:"; head -16 "$OUT/functions-$p.txt"
    done
  else
    echo "no cubin (NESLE_CUBIN, or the fatbin $FATBIN and cuobjdump) or no nvdisasm: the CSVs in $OUT need bench/sass_profile.py elsewhere"
  fi
fi
step done
if [ ${#failed[@]} -gt 0 ]; then
  echo "${#failed[@]} checks FAILED:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
