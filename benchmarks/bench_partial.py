"""Partial-label training against its baselines (issue 36, part 3).

Each scenario damages the training annotation of ned.train (or CoNLL-2000 train) and
trains four CRFs on the result: full supervision (the undamaged file), dropping every
sentence the damage touched, reading what is missing as ``O``, and partial-label
training (``CRF(partial=True)``: the marginal likelihood, :mod:`fstchunk.models.partial`);
each is MAP-decoded on the test file and scored by conlleval's F.  A missing-as-O file whose sequences are
invalid (``O I-PER``) is read as ``fstchunk train`` reads it (``--on-invalid repair``,
conlleval's reading).

Scenarios: ``hidden`` (a): a share of the tokens' tags hidden at random (``?``);
``merged`` (b): the documents in two halves, one annotating only PER and LOC, the other
only ORG and MISC (``# annotated:`` declarations; "drop" keeps nothing here, since every
sentence is partial); ``untyped`` (c): a share of the entities keep their span, lose
their type (``B-* I-*``); ``dictionary`` (d): a share of the sentences fully annotated,
the rest only with dictionary matches of the entities seen there (``?`` elsewhere).

    python benchmarks/bench_partial.py --corpus ned --scenario merged --max-iter 100
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile

import numpy as np

from common import Timer, data_path, write_section
from fstchunk import evaluate
from fstchunk.io.annotation import read_partial
from fstchunk.decoding.batch import decode_sentences
from fstchunk.io.conll import read_conll
from fstchunk.io.gold import check_gold
from fstchunk.models.crf import CRF

CORPORA = {"ned": ("conll2002", "ned.train", "ned.testb", "ner"),
           "conll2000": ("conll2000", "train.txt", "test.txt", "tmpt3")}
SCENARIOS = ("hidden", "merged", "untyped", "dictionary")
DOCSTART = "-DOCSTART-"


def documents(path: str) -> list[list[list[list[str]]]]:
    """The file's documents (split at -DOCSTART- lines), each a list of sentences' rows."""
    text = open(path, encoding="utf-8").read()
    parts, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.split(None, 1)[:1] == [DOCSTART]:
            parts.append(cur)
            cur = []
        else:
            cur.append(line)
    parts.append(cur)
    return [[s.rows for s in read_conll(io.StringIO("".join(p)))] for p in parts if
            any(x.strip() for x in p)]


def limit(docs, n: int) -> list:
    """The documents cut after their first ``n`` sentences in all."""
    out = []
    for d in docs:
        if n <= 0:
            break
        out.append(d[:n])
        n -= len(out[-1])
    return out


def spans(tags: list[str]) -> list[tuple[str, int, int]]:
    """IOB2 entities (type, start, end)."""
    out, i = [], 0
    while i < len(tags):
        if tags[i].startswith("B-"):
            j = i + 1
            while j < len(tags) and tags[j] == "I-" + tags[i][2:]:
                j += 1
            out.append((tags[i][2:], i, j))
            i = j
        else:
            i += 1
    return out


def damage(docs, scenario: str, share: float, rng) -> tuple[list, list, list]:
    """(partial sentences as (declaration, rows with cells), missing-as-O rows, rows of
    the untouched sentences)."""
    partial, as_o, kept = [], [], []
    half = len(docs) // 2
    dictionary: dict[tuple[str, ...], set[str]] = {}
    if scenario == "dictionary":
        sents = [s for d in docs for s in d]
        full = set(rng.choice(len(sents), int(share * len(sents)), replace=False).tolist())
        for k in full:
            tags = [r[-1] for r in sents[k]]
            for t, a, b in spans(tags):
                dictionary.setdefault(tuple(r[0] for r in sents[k][a:b]), set()).add(t)
        longest = max(map(len, dictionary), default=1)
        docs = [[(k in full, s) for k, s in enumerate(sents)]]
    for d, doc in enumerate(docs):
        for item in doc:
            flag, rows = item if scenario == "dictionary" else (None, item)
            tags = [r[-1] for r in rows]
            cells, declared = list(tags), None
            if scenario == "hidden":
                cells = ["?" if h else t for t, h in zip(tags, rng.random(len(tags)) < share)]
            elif scenario == "merged":
                keep = ("LOC", "PER") if d < half else ("MISC", "ORG")
                declared = ",".join(keep)
                cells = [t if t == "O" or t[2:] in keep else "O" for t in tags]
            elif scenario == "untyped":
                for t, a, b in spans(tags):
                    if rng.random() < share:
                        cells[a:b] = ["B-*"] + ["I-*"] * (b - a - 1)
            elif scenario == "dictionary" and not flag:
                cells = ["?"] * len(tags)
                words = [r[0] for r in rows]
                i = 0
                while i < len(words):
                    for w in range(min(longest, len(words) - i), 0, -1):
                        types = dictionary.get(tuple(words[i:i + w]))
                        if types:
                            cells[i:i + w] = ["|".join(f"B-{t}" for t in sorted(types))] + \
                                ["|".join(f"I-{t}" for t in sorted(types))] * (w - 1)
                            i += w - 1
                            break
                    i += 1
            touched = declared is not None or cells != tags
            partial.append((declared, [r[:-1] + [c] for r, c in zip(rows, cells)]))
            missing = ["O" if ("?" in c or "*" in c or "|" in c) else c for c in cells]
            as_o.append([r[:-1] + [c] for r, c in zip(rows, missing)])
            if not touched:
                kept.append(rows)
    return partial, as_o, kept


def rows_to_sentences(sentences) -> list:
    """Sentences' rows as :class:`~fstchunk.io.conll.Sentence` objects."""
    return read_conll(io.StringIO("".join(" ".join(r) + "\n" for s in sentences
                                          for r in s + [[]])))


def write(path: str, sentences, declarations: bool = False) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for item in sentences:
            declared, rows = item if declarations else (None, item)
            if declared:
                out.write(f"# annotated: {declared}\n")
            for r in rows:
                out.write(" ".join(r) + "\n")
            out.write("\n")


def train_and_test(items, test, features: str, partial: bool, max_iter: int, l2):
    with Timer() as t:
        crf = CRF(features, "IOB2", partial=partial, max_iter=max_iter, l2=l2).fit(items)
    pred = decode_sentences(crf, test, "map", 1.0, output_scheme="IOB2")
    o = evaluate([s.column(-1) for s in test], pred, scheme="IOB2").overall
    return o.f, f"{o.precision:.2f} / {o.recall:.2f}", t.seconds


def describe(partial, docs, scheme: str = "IOB2") -> str:
    """What the damage left in the touched sentences (read back as ``--partial`` reads
    them): cells that allow every tag, the other cells that rule out the gold tag
    (noise), and the entity tokens held in some chunk (O ruled out, gold allowed)."""
    from fstchunk.schemes.tagspace import TagSet
    gold = [[r[-1] for r in s] for d in docs for s in d]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "partial.txt")
        write(path, partial, declarations=True)
        sentences = read_partial(path, -1, scheme)
    space = TagSet(scheme, sorted({t[2:] for g in gold for t in g if t != "O"}))
    col = {t: i for i, t in enumerate(space.tags)}
    n = every = other = noise = entities = held = 0
    for ps, g in zip(sentences, gold):
        if ps.tags_or_none() == g:
            continue
        m = ps.mask(space)
        for i, t in enumerate(g):
            n += 1
            entities += t != "O"
            if m[i].all():
                every += 1
                continue
            other += 1
            noise += not m[i, col[t]]
            held += t != "O" and bool(m[i, col[t]]) and not m[i, col["O"]]
    return (f"touched sentences: {n} tokens, {every} allow every tag "
            f"({100 * every / max(n, 1):.1f} %); {noise} of the {other} other cells rule "
            f"out the gold tag ({100 * noise / max(other, 1):.1f} %); {held} of the "
            f"{entities} entity tokens ({100 * held / max(entities, 1):.1f} %) are held in "
            f"a chunk with their gold tag allowed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=tuple(CORPORA), default="ned")
    ap.add_argument("--scenario", choices=SCENARIOS, required=True)
    ap.add_argument("--share", type=float, default=None,
                    help="hidden: tokens (0.5); untyped: entities (0.3); dictionary: "
                         "fully annotated sentences (0.2)")
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--l2", type=float, default=None, help="λ (none: ML's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="full,drop,as-o,partial")
    ap.add_argument("--describe", action="store_true",
                    help="print what the damage leaves (describe()) and train nothing")
    ap.add_argument("--limit", type=int, default=None,
                    help="a check run: the first N training and test sentences only, "
                         "the table printed, RESULTS.md not written")
    ap.add_argument("--known", default="",
                    help="rows measured by an earlier run of this command, not rerun: "
                         "NAME=F/SECONDS,... (e.g. full=78.79/423: the full-data CRF is "
                         "the same in every scenario)")
    args = ap.parse_args()
    share = args.share if args.share is not None else {
        "hidden": 0.5, "merged": 0.0, "untyped": 0.3, "dictionary": 0.2}[args.scenario]
    folder, train_name, test_name, features = CORPORA[args.corpus]
    train_path, test_path = data_path(folder, train_name), data_path(folder, test_name)
    docs = documents(train_path)
    test = read_conll(test_path)
    if args.limit is not None:
        docs = limit(docs, args.limit)
        test = test[:args.limit]
    rng = np.random.default_rng(args.seed)
    partial, as_o, kept = damage(docs, args.scenario, share, rng)
    if args.describe:
        print(describe(partial, docs))
        return
    rows = []
    known = {}
    for item in filter(None, args.known.split(",")):
        name, _, value = item.partition("=")
        f, _, secs = value.partition("/")
        known[name] = (name, "", f"{float(f):.2f}", "", f"{secs} (earlier run)")
    with tempfile.TemporaryDirectory() as tmp:
        p_path, o_path = os.path.join(tmp, "partial.txt"), os.path.join(tmp, "as_o.txt")
        write(p_path, partial, declarations=True)
        write(o_path, as_o)
        inputs = {"full": (read_conll(train_path) if args.limit is None else
                           rows_to_sentences([s for d in docs for s in d]), False),
                  "drop": (rows_to_sentences(kept) if kept else None, False),
                  "as-o": (check_gold(read_conll(o_path), "IOB2", -1, "repair").sentences,
                           False),             # as train reads it: conlleval's repair
                  "partial": (read_partial(p_path, -1, "IOB2"), True)}
        for name in args.variants.split(","):
            items, is_partial = inputs[name]
            if name in known:
                rows.append(known[name][:1] + (len(items) if items else 0,) + known[name][2:])
                continue
            if not items:
                rows.append((name, 0, "n/a (no sentence untouched)", "", ""))
                continue
            f, pr, secs = train_and_test(items, test, features, is_partial, args.max_iter,
                                         args.l2)
            rows.append((name, len(items), f"{f:.2f}", pr, f"{secs:.0f}"))
            print(name, len(items), f"{f:.2f}", pr, f"{secs:.0f} s", flush=True)
    if args.limit is not None:
        print(f"check run on {args.limit} sentences: RESULTS.md not written")
        return
    full = next((float(r[2]) for r in rows if r[0] == "full"), None)
    table = "\n".join(f"| {n} | {k} | {f} | {pr} | " + (f"{float(f) - full:+.2f}" if full
                      is not None and f[0].isdigit() else "") + f" | {s} |"
                      for n, k, f, pr, s in rows)
    body = ("ned.train → ned.testb" if args.corpus == "ned" else "CoNLL-2000 train → test") + \
        f", features {features}, IOB2, MAP decoding; scenario **{args.scenario}**" + \
        (f" (share {share})" if args.scenario != "merged" else "") + \
        f"; L-BFGS at most {args.max_iter} iterations, λ " + \
        (f"{args.l2:g}" if args.l2 is not None else "ML's default") + \
        f", seed {args.seed}; one run each, no choice made on test.\n\n" \
        "| training data | sentences | test F | P / R | vs full | training s |\n" \
        "|---|---|---|---|---|---|\n" + table
    seed = f", seed {args.seed}" if args.seed else ""      # seed 0's section keeps its name
    write_section(f"Partial annotation (issue 36): {args.corpus}, {args.scenario}{seed}", body)


if __name__ == "__main__":
    main()
