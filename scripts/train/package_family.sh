#!/usr/bin/env bash
# Copies a trained family (scripts/train/train_family.sh) into models/, the layout the repository
# ships, and records the held-out figures the shipped-models test reproduces:
#
#   bash scripts/train/package_family.sh [FAMILY_DIR] [MODELS_DIR]   # build/family, models
#
#   MODELS_DIR/target/  config.json, model.safetensors, training.json   (HF layout)
#   MODELS_DIR/draft/   config.json, model.safetensors, training.json   (HF layout)
#   MODELS_DIR/heads/   config.json, parallel.safetensors, causal.safetensors, training.json
#   MODELS_DIR/tokenizer.model, MODELS_DIR/corpus-manifest.tsv
#   MODELS_DIR/heldout-slice.ids   the first SLICE_TOKENS held-out tokens (int32)
#   MODELS_DIR/heldout-slice.json  each model's held-out figures on that slice (specplan-train
#                                  --evaluate, the reference BLAS: what a fresh machine computes)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
family="$(cd "${1:-$root/build/family}" && pwd)"
models="${2:-$root/models}"
mkdir -p "$models"
models="$(cd "$models" && pwd)"
build="${BUILD_DIR:-$root/build}"
slice_tokens="${SLICE_TOKENS:-4200}"
trainer="$build/train/specplan-train"
[ -x "$trainer" ] || { echo "package_family: $trainer not built (bash scripts/build.sh)" >&2; exit 1; }
for f in target/model.safetensors draft/model.safetensors heads/parallel.safetensors \
  tokenizer.model corpus/heldout.ids; do
  [ -s "$family/$f" ] || { echo "package_family: $family/$f missing (train_family.sh)" >&2; exit 1; }
done
mkdir -p "$models/target" "$models/draft" "$models/heads"
for m in target draft; do
  cp "$family/$m/config.json" "$family/$m/model.safetensors" "$family/$m/training.json" "$models/$m/"
done
cp "$family/heads/config.json" "$family/heads/parallel.safetensors" "$family/heads/training.json" \
  "$models/heads/"
[ ! -s "$family/heads/causal.safetensors" ] || cp "$family/heads/causal.safetensors" "$models/heads/"
cp "$family/tokenizer.model" "$models/tokenizer.model"
cp "$family/corpus/manifest.tsv" "$models/corpus-manifest.tsv"
head -c $((slice_tokens * 4)) "$family/corpus/heldout.ids" > "$models/heldout-slice.ids"
cd "$models"
eval_json() { "$trainer" --evaluate "$@" --heldout heldout-slice.ids --threads "$(nproc)"; }
{
  printf '{\n"target": %s,\n' "$(eval_json target)"
  printf '"draft": %s,\n' "$(eval_json draft)"
  printf '"heads": %s\n}\n' "$(eval_json heads --heads-for target)"
} > heldout-slice.json.tmp
mv heldout-slice.json.tmp heldout-slice.json
du -sh "$models"
