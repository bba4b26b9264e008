#!/usr/bin/env bash
# ML and minimum-risk CRFs on CoNLL-2000, decoded by MAP and by exact MEU, scored by
# conlleval (the figures of benchmarks/RESULTS.md, "CRF training: conll2000").
# Tuning happens on dev.txt; test.txt is for the final figures only.
set -euo pipefail
DATA=${FSTCHUNK_DATA:-../shared/data}/conll2000
OUT=${OUT:-runs}
mkdir -p "$OUT"
fstchunk train --train "$DATA/train.txt" --dev "$DATA/dev.txt" --features tmpt3 \
    --objective ml --l2 0.5 --max-iter 200 -o "$OUT/ml.npz"
fstchunk train --train "$DATA/train.txt" --dev "$DATA/dev.txt" --objective meu --beta 1 \
    --l2 0.005 --init "$OUT/ml.npz" --max-iter 10 -o "$OUT/meu.npz"
fstchunk train --train "$DATA/train.txt" --dev "$DATA/dev.txt" --objective meu-corpus --beta 1 \
    --l2 1e-6 --init "$OUT/ml.npz" --max-iter 20 -o "$OUT/meu-corpus.npz"
for model in ml meu meu-corpus; do
  for decoder in map meu; do
    fstchunk decode --model "$OUT/$model.npz" --input "$DATA/test.txt" --decoder $decoder \
        > "$OUT/$model.$decoder.txt"
    echo "== $model-trained, $decoder decoding"
    fstchunk eval "$OUT/$model.$decoder.txt" | head -2
  done
done
