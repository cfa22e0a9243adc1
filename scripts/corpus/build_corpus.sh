#!/usr/bin/env bash
# Builds the training corpus of the trained model family (issue 18) from English text that Debian
# packages ship, with a held-out split, in a folder of its own (nothing is downloaded but the
# packages):
#
#   bash scripts/corpus/build_corpus.sh [OUT_DIR]      # default build/corpus
#
# Sources (each its own document stream; the last HELDOUT_PERCENT % of every source's lines is
# held out, so held-out text is never a neighbour of training text from the same place):
#   jargon   jargon-text: the Jargon File 4.4.7 (/usr/share/doc/jargon-text/jargon.txt.gz)
#   bible    bible-kjv: the King James Bible, dumped by its `bible` program, verse numbers dropped
#   gcide    dict-gcide: the Collaborative International Dictionary of English (dictd text), its
#            first GCIDE_MB MB of entries after the header, markup kept as it is
#   c        libc6-dev: the C library's headers (/usr/include/*.h), a code-like domain
# Writes OUT_DIR/train.txt, OUT_DIR/heldout.txt and OUT_DIR/manifest.tsv (source, package version,
# bytes in each split, sha256 of each split). Same packages, same output, byte for byte.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build/corpus}"
heldout_percent="${HELDOUT_PERCENT:-5}"
gcide_mb="${GCIDE_MB:-6}"
export LC_ALL=C

need=()
for p in jargon-text bible-kjv dict-gcide libc6-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  echo "build_corpus: installing ${need[*]}" >&2
  apt_get=(apt-get)
  [ "$(id -u)" -ne 0 ] && apt_get=(sudo apt-get)
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -q "${need[@]}" >&2
fi

mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

source_jargon() { zcat /usr/share/doc/jargon-text/jargon.txt.gz; }
# One verse per line (a wide line width keeps verses whole), book headings kept, numbers dropped.
source_bible() { bible -l 100000 -m 16384 "Ge1:1-Re22:21" | sed -E 's/^ *[0-9]+ //'; }
# head stops reading early, which breaks the pipe behind it on purpose.
source_gcide() (
  set +o pipefail
  zcat /usr/share/dictd/gcide.dict.dz | sed -n '/^ Begin file 1 of 26/,$p' | head -c $((gcide_mb << 20)) |
    sed '$d' # the cut's last line is partial
)
source_c() { find /usr/include -maxdepth 1 -name '*.h' | sort | xargs cat; }

: >"$tmp/train.txt"
: >"$tmp/heldout.txt"
printf 'source\tpackage\ttrain_bytes\theldout_bytes\n' >"$tmp/manifest.tsv"
for src in jargon:jargon-text bible:bible-kjv gcide:dict-gcide c:libc6-dev; do
  name="${src%%:*}"
  pkg="${src#*:}"
  "source_$name" | tr -d '\r' >"$tmp/$name.txt"
  lines=$(wc -l <"$tmp/$name.txt")
  keep=$((lines - lines * heldout_percent / 100))
  head -n "$keep" "$tmp/$name.txt" >"$tmp/$name.train"
  tail -n +"$((keep + 1))" "$tmp/$name.txt" >"$tmp/$name.heldout"
  cat "$tmp/$name.train" >>"$tmp/train.txt"
  cat "$tmp/$name.heldout" >>"$tmp/heldout.txt"
  printf '%s\t%s=%s\t%d\t%d\n' "$name" "$pkg" "$(dpkg-query -W -f='${Version}' "$pkg")" \
    "$(wc -c <"$tmp/$name.train")" "$(wc -c <"$tmp/$name.heldout")" >>"$tmp/manifest.tsv"
  echo "build_corpus: $name: $lines lines, $keep for training" >&2
done
for split in train heldout; do
  printf '# %s.txt sha256 %s\n' "$split" "$(sha256sum "$tmp/$split.txt" | cut -d' ' -f1)" \
    >>"$tmp/manifest.tsv"
done
mv "$tmp/train.txt" "$tmp/heldout.txt" "$tmp/manifest.tsv" "$out/"
echo "build_corpus: wrote $out/train.txt ($(wc -c <"$out/train.txt") bytes)," \
  "$out/heldout.txt ($(wc -c <"$out/heldout.txt") bytes), $out/manifest.tsv" >&2
