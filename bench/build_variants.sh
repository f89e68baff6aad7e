#!/usr/bin/env bash
# Builds a nesle-bench-gpu for main and for each kernel variant, to run side by side on a GPU
# machine with bench/gpu_variants.sh (NAME=BIN variants). A variant is one or more patches of
# bench/variants/ applied in the order given, joined by `+`; `main` builds HEAD as it is. Each
# build runs in a clean worktree of HEAD with the pinned nvcc (the wheel's compiler), so
# uncommitted changes are not in it. Writes DIR/bench-NAME (NAME: the variant with `+` as `-`)
# and, with -z, gzipped copies too (about a third of the size, for carrying).
#
#   bench/build_variants.sh [-z] DIR VARIANT...
#   (e.g. bench/build_variants.sh -z /tmp/bins main 100c-read-lines-first 101-vote-loads-at-once \
#        100c-read-lines-first+101-vote-loads-at-once)
set -euo pipefail
zip=0
[ "${1:-}" = -z ] && { zip=1; shift; }
[ $# -ge 2 ] || { echo "usage: $0 [-z] DIR VARIANT..." >&2; exit 2; }
dir=$(mkdir -p "$1" && cd "$1" && pwd); shift
root=$(git rev-parse --show-toplevel)
nvcc=${NESLE_NVCC:-$(python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin', 'nvcc'))")}
wt=$(mktemp -d)/tree
git -C "$root" worktree add -q --detach "$wt" HEAD
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
# One target folder for all: mostly only the kernels differ between builds, so each rebuild is short.
target=${CARGO_TARGET_DIR:-$root/target/variants}
for v in "$@"; do
  # The whole tree back to HEAD: a patch may change the crates too (#126: FlatState's layout).
  git -C "$wt" checkout -q -- . && git -C "$wt" clean -qfd
  if [ "$v" != main ]; then
    IFS=+ read -ra patches <<< "$v"
    for p in "${patches[@]}"; do patch -s -p1 -d "$wt" < "$root/bench/variants/$p.patch"; done
  fi
  (cd "$wt" && NESLE_NVCC=$nvcc NESLE_REQUIRE_KERNELS=1 CARGO_TARGET_DIR=$target \
    cargo build -q --release -p nes-cuda --bin nesle-bench-gpu)
  out=$dir/bench-${v//+/-}
  cp "$target/release/nesle-bench-gpu" "$out"
  [ $zip = 1 ] && gzip -c "$out" > "$out.gz"
  echo "built $out"
done
