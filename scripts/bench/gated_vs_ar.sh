#!/usr/bin/env bash
# Gated strategies against AR with draft = target on the CPU (issue 29): with draft = target a
# draft level costs a target step, so the speculation gate keeps (almost) every step undrafted and
# each gated strategy should decode at AR's speed. This runs specplan-bench RUNS times per thread
# setting and prints, per strategy, the median tokens/s and the median ratio to AR.
#
# Each run is one specplan-bench process with AR listed three times among the gated strategies
# (ar,S1,S2,ar,S3,...,ar): a strategy's ratio is its tokens/s over the geometric mean of that
# process's AR rows, so a machine whose speed drifts during a run (other work on a shared box)
# moves both sides. Medians are over the RUNS processes.
#
#   scripts/bench/gated_vs_ar.sh                       # 3 runs, --threads 1 and the default
#   RUNS=5 THREADS="1" scripts/bench/gated_vs_ar.sh
#   MODE=callgrind scripts/bench/gated_vs_ar.sh        # instruction counts instead (repeatable)
#
# MODE=callgrind runs each strategy alone under valgrind's callgrind (2 prompts x 64 tokens,
# --threads 1, counting only inside BatchDecoder::Run, i.e. the warm-up and the measured decode,
# not model loading or decoder creation) and prints the instructions per strategy and their ratio
# to AR's: independent of the machine's load, about 1.5-3 minutes per strategy.
#
# Environment: BUILD_DIR (build), BENCH (the binary; $BUILD_DIR/runtime/specplan-bench), RUNS (3),
# THREADS ("1 0"; 0 = torch's default), STRATEGIES (bestfirst,dynatree,batch, plus heads,causal
# when HEADS exists), TARGET (models/target), HEADS (models/heads), PROMPTS
# (runtime/prompts/tiny.jsonl: 8 prompts), MAX_NEW_TOKENS (64), GATE (on), MODE (time |
# callgrind). Extra arguments go to specplan-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
defaults BUILD_DIR=build RUNS=3 THREADS="1 0" TARGET=models/target HEADS=models/heads \
  PROMPTS=runtime/prompts/tiny.jsonl MAX_NEW_TOKENS=64 GATE=on MODE=time
defaults BENCH="$BUILD_DIR/runtime/specplan-bench"
default_strategies="bestfirst,dynatree,batch"
heads_args=()
if [[ -d "$HEADS" ]]; then
  default_strategies+=",heads,causal"
  heads_args=(--heads "$HEADS")
fi
strategies="${STRATEGIES:-$default_strategies}"
[[ -x "$BENCH" ]] || { echo "no $BENCH: build the specplan-bench target first" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# target $TARGET, draft = target, prompts $PROMPTS, $MAX_NEW_TOKENS new tokens, gate $GATE"

if [[ "$MODE" == callgrind ]]; then
  command -v valgrind > /dev/null || { echo "MODE=callgrind needs valgrind" >&2; exit 1; }
  printf "%-10s %16s %8s\n" strategy instructions vs_ar
  ar_ir=""
  for s in ar ${strategies//,/ }; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/$s.cg" \
      "--toggle-collect=specplan::runtime::BatchDecoder::Run*" \
      "$BENCH" --target "$TARGET" --draft target "${heads_args[@]}" --strategies "$s" \
      --prompts "$PROMPTS" --max-prompts 2 --max-new-tokens "$MAX_NEW_TOKENS" --threads 1 \
      --gate "$GATE" "$@" > "$tmp/$s.log" 2>&1 || { cat "$tmp/$s.log" >&2; exit 1; }
    ir="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$tmp/$s.cg" | head -1)"
    [[ -n "$ar_ir" ]] || ar_ir="$ir"
    printf "%-10s %16s %8s\n" "$s" "$ir" "$(awk -v a="$ir" -v b="$ar_ir" 'BEGIN{printf "%.4f", a/b}')"
  done
  exit 0
fi

# ar,S1,S2,ar,S3,...,ar: AR first, in the middle and last.
IFS=, read -r -a list <<< "$strategies"
order="ar"
half=$(( (${#list[@]} + 1) / 2 ))
for i in "${!list[@]}"; do
  order+=",${list[$i]}"
  if (( i + 1 == half )); then order+=",ar"; fi
done
order+=",ar"

for t in $THREADS; do
  for r in $(seq 1 "$RUNS"); do
    "$BENCH" --target "$TARGET" --draft target "${heads_args[@]}" --strategies "$order" \
      --prompts "$PROMPTS" --max-new-tokens "$MAX_NEW_TOKENS" --threads "$t" --gate "$GATE" "$@" \
      > "$tmp/t$t.r$r.txt" 2> "$tmp/t$t.r$r.err" || { cat "$tmp/t$t.r$r.err" >&2; exit 1; }
  done
  echo
  echo "## --threads $t ($([[ $t == 0 ]] && echo "torch default" || echo "$t")), $RUNS runs, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$tmp" "$t" "$RUNS" "$strategies" <<'EOF'
import math, statistics, sys
tmp, t, runs, strategies = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
tps = {s: [] for s in ["ar"] + strategies}
ratio = {s: [] for s in strategies}
exact = {s: True for s in strategies}
for r in range(1, runs + 1):
    rows = {}
    for line in open(f"{tmp}/t{t}.r{r}.txt"):
        f = line.split()
        if len(f) >= 13 and f[0] in tps and f[1] != "tok/s":
            rows.setdefault(f[0], []).append(float(f[1]))
            if f[0] != "ar" and f[12] != "yes":
                exact[f[0]] = False
        if not line.strip():
            break  # the policy table follows
    ar = math.exp(sum(math.log(x) for x in rows["ar"]) / len(rows["ar"]))
    tps["ar"].append(ar)
    for s in strategies:
        tps[s].append(rows[s][0])
        ratio[s].append(rows[s][0] / ar)
print(f"{'strategy':10} {'tok/s':>9} {'vs AR':>7} {'min':>7} {'max':>7}  greedy = AR")
print(f"{'ar':10} {statistics.median(tps['ar']):9.1f} {'1.000':>7}")
for s in strategies:
    print(f"{s:10} {statistics.median(tps[s]):9.1f} {statistics.median(ratio[s]):7.3f} "
          f"{min(ratio[s]):7.3f} {max(ratio[s]):7.3f}  {'yes' if exact[s] else 'NO'}")
EOF
done
