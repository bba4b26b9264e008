#!/usr/bin/env bash
# ML and minimum-risk CRFs, decoded by MAP and by exact MEU, scored by conlleval: the
# four rows of benchmarks/RESULTS.md, "CRF training: conll2000, IOBES tags, MEU from ML
# λ = 0.1" and "CRF training: ned, IOBES tags, MEU from ML λ = 0.03".
#
#     examples/minimum_risk.sh conll2000      # CoNLL-2000 chunking, tmpt3 features
#     examples/minimum_risk.sh ned            # CoNLL-2002 Dutch NER, ner features
#
# The tag scheme the CRF is trained in (IOBES: the data's IOB2 tags are converted, and
# decode writes IOB2 again) and the λ values are the ones chosen on the development set
# (dev.txt, ned.testa) by benchmarks/bench_tuning.py ("λ on dev" sections of RESULTS.md);
# the test set is for the final figures only. The MEU objective is the expected corpus F
# (what conlleval measures), started from an ML model whose λ (START_L2) was chosen on dev
# jointly with the MEU λ (bench_tuning.py --meu-from all); it need not be the best ML λ.
set -euo pipefail
CORPUS=${1:-conll2000}
ROOT=${FSTCHUNK_DATA:-../shared/data}
case "$CORPUS" in
  conll2000) TRAIN=$ROOT/conll2000/train.txt; DEV=$ROOT/conll2000/dev.txt
             TEST=$ROOT/conll2000/test.txt; FEATURES=tmpt3; SCHEME=IOBES; ML_L2=0.03; START_L2=0.1; MEU_L2=1e-7 ;;
  ned)       TRAIN=$ROOT/conll2002/ned.train; DEV=$ROOT/conll2002/ned.testa
             TEST=$ROOT/conll2002/ned.testb; FEATURES=ner; SCHEME=IOBES; ML_L2=0.1; START_L2=0.03; MEU_L2=1e-7 ;;
  *) echo "usage: $0 conll2000|ned" >&2; exit 2 ;;
esac
OUT=${OUT:-runs/$CORPUS}
mkdir -p "$OUT"
for l2 in $ML_L2 $START_L2; do
  fstchunk train --train "$TRAIN" --dev "$DEV" --features $FEATURES \
      --scheme $SCHEME --objective ml --l2 $l2 --max-iter 200 -o "$OUT/ml_l$l2.npz"
done
cp "$OUT/ml_l$ML_L2.npz" "$OUT/ml.npz"
fstchunk train --train "$TRAIN" --dev "$DEV" --objective meu-corpus --beta 1 \
    --l2 $MEU_L2 --init "$OUT/ml_l$START_L2.npz" --max-iter 20 -o "$OUT/meu-corpus.npz"
for model in ml meu-corpus; do
  for decoder in map meu; do
    fstchunk decode --model "$OUT/$model.npz" --input "$TEST" --decoder $decoder \
        > "$OUT/$model.$decoder.txt"
    echo "== $model-trained, $decoder decoding"
    fstchunk eval "$OUT/$model.$decoder.txt" | head -2
  done
done
