#!/usr/bin/env bash
# Build Moses' `extractor` and `kbmira` (mert/ of github.com/moses-smt/mosesdecoder) without
# bjam, for benchmarks/mira.py --moses OUT. Needs g++ and the boost/zlib headers:
#   apt-get install libboost-dev libboost-program-options-dev libboost-system-dev \
#     libboost-thread-dev libboost-filesystem-dev zlib1g-dev
# Usage: benchmarks/build_kbmira.sh MOSES_CHECKOUT OUT_DIR [--fix-dedup]   (about 10 CPU-minutes)
# --fix-dedup compiles mert/FeatureDataIterator.cpp with its operator== comparing the two items
# (upstream compares item1 with itself, so kbmira's per-sentence de-duplication drops every
# hypothesis whose hash shares a bucket with a kept one; docs/nmt.md). Use another OUT_DIR for
# it: objects already in OUT_DIR are reused.
set -euo pipefail
src=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
mkdir -p "$out/obj"
cd "$src"
mert="Util GzFileBuf FileStream Timer ScoreStats ScoreArray ScoreData ScoreDataIterator
FeatureStats FeatureArray FeatureData FeatureDataIterator ForestRescore HopeFearDecoder Hypergraph
MiraFeatureVector MiraWeightVector HypPackEnumerator Data BleuScorer CHRFScorer BleuDocScorer
SemposScorer SemposOverlapping InterpolatedScorer Point PerScorer HwcmScorer InternalTree M2
M2Scorer Scorer ScorerFactory Optimizer OptimizerFactory TER/alignmentStruct TER/hashMap
TER/hashMapStringInfos TER/stringHasher TER/terAlignment TER/terShift TER/hashMapInfos
TER/infosHasher TER/stringInfosHasher TER/tercalc TER/tools TER/bestShiftStruct TerScorer
CderScorer MeteorScorer Vocabulary PreProcessFilter SentenceLevelScorer Permutation
PermutationScorer StatisticsBasedScorer kbmira extractor"
util="exception file file_piece mmap murmur_hash pool random read_compressed scoped string_piece
usage integer_to_string float_to_string ersatz_progress parallel_read bit_packing"
sources=$( (for f in $mert; do echo "mert/$f.cpp"; done; for f in $util; do echo "util/$f.cc"; done
  ls util/double-conversion/*.cc) )
# the Jamfile's release build: -O3, NDEBUG; two compilers at a time
echo "$sources" | xargs -P 2 -I{} sh -c \
  'o="$0/obj/$(echo {} | tr / _).o"; [ -f "$o" ] || g++ -O3 -DNDEBUG -DHAVE_ZLIB -std=c++14 -w -I. -c {} -o "$o"' "$out"
libs="-lboost_program_options -lboost_filesystem -lboost_system -lboost_thread -lz -lpthread"
if [ "${3:-}" = "--fix-dedup" ]; then
  fixed=$(mktemp -d)
  sed 's/item1\.dense==item1\.dense \&\& item1\.sparse==item1\.sparse/item1.dense==item2.dense \&\& item1.sparse==item2.sparse/' \
    mert/FeatureDataIterator.cpp > "$fixed/FeatureDataIterator.cpp"
  grep -q "item1.dense==item2.dense" "$fixed/FeatureDataIterator.cpp" || { echo "the fix did not apply" >&2; exit 1; }
  g++ -O3 -DNDEBUG -DHAVE_ZLIB -std=c++14 -w -I. -Imert -c "$fixed/FeatureDataIterator.cpp" \
    -o "$out/obj/mert_FeatureDataIterator.cpp.o"
  rm -r "$fixed"
fi
common=$(ls "$out"/obj/*.o | grep -v -e mert_kbmira -e mert_extractor)
for program in kbmira extractor; do
  # shellcheck disable=SC2086
  g++ -o "$out/$program" "$out/obj/mert_$program.cpp.o" $common $libs
done
echo "built $out/kbmira and $out/extractor"
