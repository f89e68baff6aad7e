#!/usr/bin/env bash
# Prebuilt benchmark binaries side by side on a GPU machine: each NAME=BIN is a nesle-bench-gpu
# built from one variant (a worktree with a bench/variants patch applied; the first is the base
# the others are measured against). First each variant's GPU parity (SMB with pictures, one-frame
# steps with Start, Tetris, every test ROM; memcheck with -m), then ROUNDS rounds of protocols A,
# B and B with the gray picture at steps 30-39, 65,536 envs, alternating the variants so drift
# hits them alike; at the end the mean of each and its change against the base. Stops starting
# rounds after LIMIT seconds (for a machine that limits a command's time). Results in $OUT (one
# file a run), for docs/benchmarks/.
# Write the prediction in docs/kernel-notes.md first; record what came out there afterwards.
#
#   bench/gpu_side_by_side.sh [-r ROUNDS] [-l LIMIT] [-m] [-P] NAME=BIN...
#   (-P: no parity runs; e.g. main=/tmp/bench-main 101=/tmp/bench-101)
#
# Needs the game ROMs (NESLE_ROM_DIR or the nesle cache), the test ROMs (NESLE_TEST_ROMS,
# default ../shared/test-roms) and, with -m, compute-sanitizer on PATH.
set -u
rounds=3 limit=480 memcheck=0 parity=1
while getopts "r:l:mP" o; do
  case $o in r) rounds=$OPTARG ;; l) limit=$OPTARG ;; m) memcheck=1 ;; P) parity=0 ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-l LIMIT] [-m] [-P] NAME=BIN..." >&2; exit 2; }
ROMS=${NESLE_ROM_DIR:-$HOME/.cache/nesle/roms}
SMB=$ROMS/super-mario-bros.nes TR=${NESLE_TEST_ROMS:-../shared/test-roms}
O=${OUT:-gpu-side-by-side}
mkdir -p "$O"
export NESLE_SYNC_TIMEOUT=${NESLE_SYNC_TIMEOUT:-120}
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
last() { tail -1 "$1"; }
names=() bins=()
for v in "$@"; do names+=("${v%%=*}") bins+=("${v#*=}"); done

if [ $parity = 1 ]; then
  for i in "${!names[@]}"; do
    n=${names[$i]} b=${bins[$i]}
    timeout 90 "$b" --parity 64 --steps 40 --pixels --rom "$SMB" > "$O/par-$n-smb-pixels.txt" 2>&1
    timeout 90 "$b" --parity 64 --steps 40 --frameskip 1 --press-start 40 --pixels --rom "$SMB" > "$O/par-$n-smb-start.txt" 2>&1
    timeout 90 "$b" --parity 64 --steps 20 --pixels --rom "$ROMS/tetris.nes" > "$O/par-$n-tetris.txt" 2>&1
    timeout 150 "$b" --parity 8 --steps 4 --test-roms "$TR" > "$O/par-$n-roms.txt" 2>&1
    for f in smb-pixels smb-start tetris roms; do echo "$n parity $f: $(last "$O/par-$n-$f.txt")"; done
    if [ $memcheck = 1 ]; then
      timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$b" --parity 32 --steps 2 --pixels --rom "$SMB" > "$O/par-$n-memcheck.txt" 2>&1
      echo "$n memcheck: rc=$? $(grep -h 'ERROR SUMMARY' "$O/par-$n-memcheck.txt")"
    fi
  done
  echo "[+$(el)s] parity done"
fi

# One side-by-side run: the rate of the protocol's line of the table.
one() {
  local n=$1 b=$2 tag=$3 r=$4; shift 4
  timeout 90 "$b" --envs 65536 "$@" --warmup 30 --steps 10 --rom "$SMB" > "$O/sbs-$n-$tag-r$r.txt" 2>&1
  awk '$1 ~ /^[AB]$/ && $3 ~ /true|false/ {print $4}' "$O/sbs-$n-$tag-r$r.txt"
}
for r in $(seq 1 "$rounds"); do
  for i in "${!names[@]}"; do
    [ "$(el)" -gt "$limit" ] && break 2
    n=${names[$i]} b=${bins[$i]}
    echo "[+$(el)s] round $r $n: A $(one "$n" "$b" A "$r" --protocols A) B $(one "$n" "$b" B "$r" --protocols B)" \
      "Bpix $(one "$n" "$b" Bpix "$r" --protocols B --pixels)"
  done
done

# The mean of each variant's rounds, and its change against the first variant's.
python3 - "$O" "${names[@]}" <<'EOF'
import glob, sys
out, names = sys.argv[1], sys.argv[2:]
def rate(f):
    for line in open(f):
        p = line.split()
        if len(p) >= 4 and p[0] in ("A", "B") and p[2] in ("true", "false"):
            return float(p[3])
mean = {}
for n in names:
    for tag in ("A", "B", "Bpix"):
        xs = [rate(f) for f in glob.glob(f"{out}/sbs-{n}-{tag}-r*.txt")]
        xs = [x for x in xs if x]
        if xs:
            mean[n, tag] = sum(xs) / len(xs)
for n in names:
    cells = []
    for tag in ("A", "B", "Bpix"):
        if (n, tag) not in mean:
            continue
        base = mean.get((names[0], tag))
        change = f" ({100 * (mean[n, tag] / base - 1):+.1f}%)" if base and n != names[0] else ""
        cells.append(f"{tag} {mean[n, tag] / 1000:,.1f}k{change}")
    print(f"{n}: " + ", ".join(cells))
EOF
echo "[+$(el)s] done"
