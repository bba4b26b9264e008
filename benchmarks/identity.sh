#!/bin/bash
# Behaviour unchanged between two source trees: trains a CRF with each on CoNLL-2000 train
# and compares the weights, then decodes CoNLL-2000 test and CoNLL-2002 ned.testb with the
# OLD tree's models under both trees (MAP, MEU, JSONL with marginals) and compares the
# outputs: byte for byte, and for JSONL every probability within a stated tolerance.
#
#   benchmarks/identity.sh OLD_TREE NEW_TREE OUTDIR     (data: $FSTCHUNK_DATA or ../shared/data)
#
# OLD_TREE, NEW_TREE: checkouts of fstchunk (e.g. `git worktree add /tmp/old <commit>`);
# both run with the current interpreter and one BLAS thread.
set -euo pipefail
OLD=$1; NEW=$2; D=$3; PY=${PYTHON:-python3}
S=${FSTCHUNK_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}
mkdir -p "$D"
export OPENBLAS_NUM_THREADS=1
old="env PYTHONPATH=$OLD $PY -m fstchunk"
new="env PYTHONPATH=$NEW $PY -m fstchunk"
$old train --train $S/conll2000/train.txt --features tmpt1 --max-iter 40 --quiet -o $D/c2k.npz
$new train --train $S/conll2000/train.txt --features tmpt1 --max-iter 40 --quiet -o $D/c2k.newtrain.npz
$old train --train $S/conll2002/ned.train --columns word,pos,tag --features ner --max-iter 40 --quiet -o $D/ned.npz
$PY - $D/c2k.npz $D/c2k.newtrain.npz <<'PYEOF'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == sorted(b.files), (a.files, b.files)
for k in a.files:
    if k == "__metadata__":
        continue                                  # training seconds and the like
    if a[k].dtype.kind == "f":
        print(f"trained {k}: largest |Δ| {float(np.max(np.abs(a[k] - b[k]), initial=0.0)):.1e}")
    else:
        print(f"trained {k}: {'equal' if np.array_equal(a[k], b[k]) else 'DIFFERENT'}")
PYEOF
for m in c2k:conll2000/test.txt ned:conll2002/ned.testb; do
  name=${m%%:*}; test=$S/${m#*:}
  for side in old new; do
    ${!side} decode --model $D/$name.npz --input $test -o $D/$name.$side.map
    ${!side} decode --model $D/$name.npz --input $test --decoder meu -o $D/$name.$side.meu
    ${!side} decode --model $D/$name.npz --input $test --format jsonl --marginals -o $D/$name.$side.jsonl
  done
  cmp $D/$name.old.map $D/$name.new.map && echo "$name MAP: byte-identical"
  cmp $D/$name.old.meu $D/$name.new.meu && echo "$name MEU: byte-identical"
  $PY - $D/$name.old.jsonl $D/$name.new.jsonl <<'PYEOF'
import json, sys
a = open(sys.argv[1]).read().splitlines(); b = open(sys.argv[2]).read().splitlines()
assert len(a) == len(b), (len(a), len(b))
worst = 0.0
def walk(x, y, path):
    global worst
    if isinstance(x, float) or isinstance(y, float):
        worst = max(worst, abs(x - y)); return
    assert type(x) is type(y), path
    if isinstance(x, dict):
        assert x.keys() == y.keys(), path
        for k in x: walk(x[k], y[k], path + [k])
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y)): walk(u, v, path + [i])
    else:
        assert x == y, (path, x, y)
for x, y in zip(a, b): walk(json.loads(x), json.loads(y), [])
same = sum(x == y for x, y in zip(a, b))
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {len(a)} lines, {same} byte-identical, the rest equal "
      f"but for p, largest |Δp| {worst:.1e}")
assert worst <= 1e-12, worst
PYEOF
done
