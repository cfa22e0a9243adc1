#!/usr/bin/env bash
# Everything specplan does on a lent GPU machine, in stages, for one `device` call (or any CUDA
# machine with PyTorch 2.x, CUDA with CUPTI, cmake and ninja; no network needed).
#
#   bash scripts/gpu/run_stages.sh STAGE...
#
# Stages (in the order given; each is time-limited and logged, and a failing stage does not stop
# the next one):
#   build        configure + build runtime/, profiler/ and their tests with CUDA, CUPTI and the fused
#                CUDA kernels (runtime/cuda/; without them if they fail to build) against python3's
#                PyTorch LibTorch (gRPC, PLplot, the tokenizer and Google Benchmark off).
#                SPECPLAN_FUSED_KERNELS=0 switches the kernels off at run time, for comparison
#   gputests     the CUDA tests: the fused kernels against LibTorch's composition, transformer
#                exactness (fp32/bf16/fp16, fused kernels on), KV gather, random init,
#                CUDA-event and CUPTI timers, calibrate on CUDA
#   tests        every runtime and profiler test
#   calib:MODEL  calibrate --mode runtime --gpu $GPU --model MODEL (bf16, CUPTI): whole passes of
#                the runtime over s = 1..1024, c = 0..16k, with the measured cells as CSV
#   calib-batch:MODEL  the same with the batch axis: --b-grid 1..64 (B_GRID) over s = 1..128,
#                c = 0, 1024, 4096 (S_GRID, C_GRID)
#   kernels:MODEL  calibrate --kernels --gpu $GPU --model MODEL (bf16): LibTorch's GEMM, attention,
#                tree-attention and elementwise tables at MODEL's shapes under $res/kernels/, and
#                the profile composed from them; KERNELS_BUDGET_S (default 240) caps the timing.
#                Compare the tables here afterwards with `specplan profiles compare-kernels --ours
#                <results>/kernels/<gpu>/specplan-libtorch* --theirs data/kernels/<gpu>/<engine>`
#   hfref        tiny HF checkpoints + reference logits (scripts/gpu/hf_reference.py)
#   hfbench      copy bandwidth, transformers' generate on a qwen3-8b config (hf_decode_bench.py)
#   bench        specplan-bench --device cuda: AR decode at c = 1024 and every strategy with a
#                qwen3-0.6b draft for a qwen3-8b target, then draft = target
#   benchfp32    every strategy in fp32 on a qwen3-0.6b target with draft = target (exactness)
#   debug        cuda-gdb backtraces of the test binaries; attnbench  attention variants (Python);
#   headers      PyTorch's C++ headers to $OUT (compile-check CUDA LibTorch code elsewhere)
#
# Packages the machine lacks (abseil, Eigen, nlohmann-json, CLI11, GoogleTest) come as Debian
# .deb files in .deps/ (fetch them on a Debian machine with scripts/gpu/fetch_deps.sh) and are
# unpacked under /tmp/deps. Results go to $RESULTS (default /tmp/specplan-gpu) and, when $OUT is
# set, to $OUT/results.tgz after every stage. Environment: GPU (registry name, default h100-sxm),
# BUILD_DIR (default build-cuda), DEADLINE_S (stop starting stages after this many seconds; 570).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
res="${RESULTS:-/tmp/specplan-gpu}"
build="${BUILD_DIR:-build-cuda}"
gpu="${GPU:-h100-sxm}"
deadline="${DEADLINE_S:-570}"
start=$(date +%s)
mkdir -p "$res"
# The binaries' RUNPATH covers their direct libraries only; abseil's libraries need each other.
export LD_LIBRARY_PATH="/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

log() { echo "run_stages[$(($(date +%s) - start))s]: $*" | tee -a "$res/summary.txt"; }
save() { [ -n "${OUT:-}" ] && tar -czf "$OUT/results.tgz" -C "$res" . 2>/dev/null; true; }
left() { echo $((deadline - ($(date +%s) - start))); }
# run NAME LIMIT_S CMD...: logs to $res/NAME.log, records the exit status in the summary.
run() {
  local name=$1 limit=$2
  shift 2
  if (($(left) < 20)); then
    log "$name: SKIPPED (deadline)"
    return 1
  fi
  ((limit > $(left))) && limit=$(left)
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$res/$name.log" 2>&1
  local rc=$?
  log "$name: rc=$rc in $(($(date +%s) - t0)) s"
  save
  return $rc
}

deps() {
  [ -d /tmp/deps/usr ] && return 0
  mkdir -p /tmp/deps
  for f in "$root"/.deps/*.deb; do dpkg -x "$f" /tmp/deps; done
}

# configure_and_build KERNELS(ON|OFF): one configure and build of the GPU targets.
configure_and_build() {
  local torch_prefix
  torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
  run "configure_kernels_$1" 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSPECPLAN_WITH_TORCH=ON -DSPECPLAN_WITH_CUPTI=ON -DSPECPLAN_WITH_GRPC=OFF \
    -DSPECPLAN_WITH_PLOT=OFF -DSPECPLAN_WITH_TOKENIZER=OFF -DSPECPLAN_BUILD_BENCHMARKS=OFF \
    -DSPECPLAN_WITH_CUDA_KERNELS="$1" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_PREFIX_PATH="$torch_prefix;/tmp/deps/usr" -DCUDAToolkit_ROOT=/usr/local/cuda \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc ||
    { tail -40 "$res/configure_kernels_$1.log"; return 1; }
  run "build_kernels_$1" 420 cmake --build "$build" -j"$(nproc)" --target specplan-bench \
    calibrate runtime_tests profiler_tests -- -k 0 ||
    { grep -B2 -A12 "error" "$res/build_kernels_$1.log" | head -80; return 1; }
}

# With the fused CUDA kernels (runtime/cuda/, SPECPLAN_WITH_CUDA_KERNELS); should that configure or
# build fail, the build without them, so that the other stages still run (the summary says which).
stage_build() {
  deps || return 1
  export TORCH_CUDA_ARCH_LIST=9.0
  export PATH="/usr/local/cuda/bin:$PATH"
  configure_and_build ON && return 0
  log "build: the fused CUDA kernels failed to build; building without them"
  rm -rf "$build"
  configure_and_build OFF
}

stage_gputests() {
  run gputests_runtime 180 "$build/tests/runtime_tests" \
    --gtest_filter='Cuda*:*Cuda*:*/CudaTransformerTest*' --gtest_output=xml:"$res/gputests_runtime.xml"
  run gputests_profiler 180 "$build/tests/profiler_tests" \
    --gtest_filter='Cuda*:*Cuda*' --gtest_output=xml:"$res/gputests_profiler.xml"
  grep -h "OK \]\|FAILED\|SKIPPED\|PASSED" "$res"/gputests_*.log | tail -60
}

stage_tests() {
  readelf -d "$build/tests/runtime_tests" | grep NEEDED | head -8 | tee "$res/needed.txt"
  run tests_runtime 300 "$build/tests/runtime_tests" --gtest_brief=1
  run tests_profiler 200 "$build/tests/profiler_tests" --gtest_brief=1
  for f in tests_runtime tests_profiler; do tail -n 8 "$res/$f.log"; done
}

stage_calib() {
  local model=$1
  mkdir -p "$res/calib/$gpu"
  run "calib_$model" 300 "$build/profiler/calibrate" --mode runtime --gpu "$gpu" --model "$model" \
    --dtype bf16 --timer cupti --s-grid "${S_GRID:-1,2,4,8,16,32,48,64,96,128,192,256,384,512,768,1024}" \
    --c-grid "${C_GRID:-0,512,1024,2048,4096,8192,16384}" --repeats "${REPEATS:-7}" --warmup 1 \
    --out "$res/calib/$gpu/$model-bf16.json" --samples-out "$res/calib/$gpu/$model-bf16.samples.csv"
  tail -8 "$res/calib_$model.log"
}

# A profile with the batch axis: ragged passes of b sequences for every b of B_GRID, on a coarser
# (s, c) grid so that |b| x |s| x |c| cells fit the call (b = 64 at c = 4096 holds 64 caches).
stage_calib_batch() {
  local model=$1
  mkdir -p "$res/calib/$gpu"
  run "calib_batch_$model" 540 "$build/profiler/calibrate" --mode runtime --gpu "$gpu" \
    --model "$model" --dtype bf16 --timer cupti --b-grid "${B_GRID:-1,2,4,8,16,32,64}" \
    --s-grid "${S_GRID:-1,2,4,8,16,32,64,128}" --c-grid "${C_GRID:-0,1024,4096}" \
    --repeats "${REPEATS:-5}" --warmup 1 --out "$res/calib/$gpu/$model-bf16.json" \
    --samples-out "$res/calib/$gpu/$model-bf16.samples.csv"
  tail -10 "$res/calib_batch_$model.log"
}

stage_debug() {
  local syms=()
  for i in 0 8 16 24 32 40 48 56; do syms+=(-ex "info symbol *(void**)(\$sp+$i)"); done
  run debug_profiler 120 cuda-gdb -batch -ex run -ex bt "${syms[@]}" --args \
    "$build/tests/profiler_tests" --gtest_filter='CalibrationTest.CudaEndToEndOnTheTinyModel'
  run debug_runtime 150 cuda-gdb -batch -ex run -ex bt "${syms[@]}" --args \
    "$build/tests/runtime_tests"
  for f in debug_profiler debug_runtime; do
    grep -B3 -A20 "SIGSEGV" "$res/$f.log" | grep -v "^\[New Thread\|^\[Thread" | head -40
  done
}

stage_attnbench() {
  run attnbench 120 python3 scripts/gpu/attention_bench.py
  cat "$res/attnbench.log"
}

# PyTorch's C++ headers, to compile-check CUDA LibTorch code on a machine without it.
stage_headers() {
  local inc
  inc="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
  [ -n "${OUT:-}" ] && tar -C "$inc" -cf - include | xz -T0 -6 >"$OUT/torch_include.tar.xz"
  ls -la "${OUT:-/tmp}"/torch_include.tar.xz
}

stage_kernels() {
  local model=$1
  mkdir -p "$res/calib/$gpu" "$res/kernels"
  run "kernels_$model" $((${KERNELS_BUDGET_S:-240} + 60)) "$build/profiler/calibrate" --kernels \
    --gpu "$gpu" --model "$model" --dtype bf16 --budget-s "${KERNELS_BUDGET_S:-240}" \
    --kernels-dir "$res/kernels" --out "$res/calib/$gpu/$model-bf16@specplan.json"
  tail -12 "$res/kernels_$model.log"
}

stage_hfref() {
  run hfref 120 python3 scripts/gpu/hf_reference.py "$res/hf_reference"
  tail -5 "$res/hfref.log"
}

qwen3_8b_config() {
  mkdir -p /tmp/qwen3-8b
  cat >/tmp/qwen3-8b/config.json <<'EOF'
{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": false,
 "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
 "max_position_embeddings": 40960, "num_attention_heads": 32, "num_hidden_layers": 36,
 "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": false,
 "vocab_size": 151936, "use_sliding_window": false}
EOF
}

stage_hfbench() {
  qwen3_8b_config
  run hfbench 240 python3 scripts/gpu/hf_decode_bench.py --config /tmp/qwen3-8b --c 1024 --new 64
  tail -20 "$res/hfbench.log"
}

# Prompts of 1024 random token ids (valid for qwen3's vocabulary).
prompts_1024() {
  python3 -c "
import random; random.seed(0)
for _ in range(8): print('{\"ids\": [' + ', '.join(str(random.randrange(151936)) for _ in range(1024)) + ']}')
" >/tmp/prompts-1024.jsonl
}

stage_bench() {
  prompts_1024
  local common=(--target random:qwen3-8b --device cuda --dtype bf16 --prompts /tmp/prompts-1024.jsonl)
  run bench_ar 120 "$build/runtime/specplan-bench" "${common[@]}" --draft random:qwen3-0.6b \
    --strategies ar --max-prompts 4 --max-new-tokens 64 --json "$res/bench_ar.json"
  run bench_draft06b 240 "$build/runtime/specplan-bench" "${common[@]}" \
    --draft random:qwen3-0.6b --strategies "${BENCH_STRATEGIES:-ar,linear,fixed,dynatree,bestfirst,lookup,merged}" \
    --max-prompts 2 --max-new-tokens 32 --json "$res/bench_draft06b.json"
  run bench_draft_target 240 "$build/runtime/specplan-bench" "${common[@]}" --draft target \
    --strategies "${BENCH_STRATEGIES:-ar,linear,fixed,dynatree,bestfirst,lookup,merged}" \
    --max-prompts 2 --max-new-tokens 32 --json "$res/bench_draft_target.json"
  for f in "$res"/bench_*.log; do tail -n 12 "$f"; done
}

# Exactness on CUDA in fp32 (bf16 outputs can differ from AR where the verification pass's GEMM
# shapes round a near-tie the other way): qwen3-0.6b target, draft = target.
stage_benchfp32() {
  prompts_1024
  run bench_fp32 200 "$build/runtime/specplan-bench" --target random:qwen3-0.6b --draft target \
    --device cuda --dtype fp32 --prompts /tmp/prompts-1024.jsonl --max-prompts 2 \
    --max-new-tokens 32 --strategies ar,linear,fixed,dynatree,bestfirst,lookup,merged \
    --json "$res/bench_fp32.json"
  tr '\r' '\n' <"$res/bench_fp32.log" | grep -v '\[' | tail -n 10
}

{
  echo "== $(date -u) on $(hostname)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -2
  g++ --version | head -1
  cmake --version | head -1
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
} >"$res/env.txt" 2>&1
cat "$res/env.txt"
for stage in "$@"; do
  log "== stage $stage ($(left) s left)"
  case "$stage" in
    build) stage_build ;;
    gputests) stage_gputests ;;
    tests) stage_tests ;;
    calib:*) stage_calib "${stage#calib:}" ;;
    calib-batch:*) stage_calib_batch "${stage#calib-batch:}" ;;
    kernels:*) stage_kernels "${stage#kernels:}" ;;
    hfref) stage_hfref ;;
    debug) stage_debug ;;
    attnbench) stage_attnbench ;;
    headers) stage_headers ;;
    hfbench) stage_hfbench ;;
    bench) stage_bench ;;
    benchfp32) stage_benchfp32 ;;
    *) log "unknown stage $stage" ;;
  esac
done
save
log "done"
cat "$res/summary.txt"
