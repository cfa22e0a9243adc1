#!/usr/bin/env bash
# From Debian text to trained checkpoints, on the CPU (issue 18's model family, as far as it goes):
#
#   bash scripts/train/train_family.sh [OUT_DIR]         # default build/family
#
#   1. scripts/corpus/build_corpus.sh: train.txt / heldout.txt from Debian packages
#   2. specplan-tokenizer train: a SentencePiece model of VOCAB pieces (one thread: reproducible)
#   3. specplan-tokenizer encode --format ids: both splits as int32 token streams
#   4. specplan-train: the target (train/configs/target.json, TARGET_STEPS steps) and the draft
#      model (train/configs/draft.json, DRAFT_STEPS steps), each in HuggingFace layout under OUT_DIR
#   5. specplan-train --heads-for target: the parallel draft heads and the causal-correction head
#      (train/configs/heads.json, HEADS_STEPS steps) on the frozen target, under OUT_DIR/heads
# Needs a build with LibTorch and the tokenizer (scripts/build.sh). Each step that already has its
# output is skipped, so a stopped run goes on where it stopped; delete OUT_DIR to start over.
#
# Speed: Debian's LibTorch calls the system BLAS, which is the slow reference BLAS unless another is
# chosen. With libopenblas0-pthread installed, the training steps use OpenBLAS through
# LD_LIBRARY_PATH (about 1.3 s per step of 16 x 128 tokens for the target on 2 cores, against
# minutes with the reference BLAS), without switching the machine's BLAS for other programs.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build/family}"
build="${BUILD_DIR:-$root/build}"
vocab="${VOCAB:-4096}"
threads="${THREADS:-$(nproc)}"
target_steps="${TARGET_STEPS:-2000}"
draft_steps="${DRAFT_STEPS:-1200}"
heads_steps="${HEADS_STEPS:-600}"
tok="$build/tokenizer/specplan-tokenizer"
trainer="$build/train/specplan-train"
for b in "$tok" "$trainer"; do
  [ -x "$b" ] || { echo "train_family: $b not built (bash scripts/build.sh)" >&2; exit 1; }
done
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
if [ -e "$openblas/libblas.so.3" ]; then
  blas=(env "LD_LIBRARY_PATH=$openblas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
else
  echo "train_family: libopenblas0-pthread is not installed; training runs on the reference" \
    "BLAS and is very slow (apt-get install libopenblas0-pthread)" >&2
  blas=(env)
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Every step runs inside OUT_DIR with relative paths: the tokenizer model and training.json record
# the paths they were given, and a shipped family must not name this machine's directories.
cd "$out"
say() { echo "train_family[$(date +%T)]: $*" >&2; }

[ -s corpus/manifest.tsv ] || bash "$root/scripts/corpus/build_corpus.sh" corpus
if [ ! -s tokenizer.model ]; then
  say "tokenizer: $vocab pieces"
  "$tok" train --input corpus/train.txt --model-prefix tokenizer --vocab-size "$vocab" --threads 1
fi
for split in train heldout; do
  [ -s "corpus/$split.ids" ] || "$tok" encode --model tokenizer.model \
    --input "corpus/$split.txt" --format ids --output "corpus/$split.ids"
done
for model in target:"$target_steps" draft:"$draft_steps"; do
  name="${model%%:*}"
  steps="${model#*:}"
  if [ -s "$name/training.json" ]; then
    say "$name: already trained ($out/$name)"
    continue
  fi
  say "$name: $steps steps"
  "${blas[@]}" "$trainer" --config "$root/train/configs/$name.json" \
    --train corpus/train.ids --heldout corpus/heldout.ids --out "$name" \
    --steps "$steps" --threads "$threads" --eval-every 250 --eval-tokens 16384
done
if [ -s heads/training.json ]; then
  say "heads: already trained ($out/heads)"
else
  say "heads: $heads_steps steps on the frozen target"
  "${blas[@]}" "$trainer" --heads-for target --config "$root/train/configs/heads.json" \
    --train corpus/train.ids --heldout corpus/heldout.ids --out heads \
    --steps "$heads_steps" --threads "$threads" --eval-every 200 --eval-tokens 16384
fi
say "done: $out/{tokenizer.model,target,draft,heads}"
