"""Decoders as objects: one registry, one vocabulary for every decision rule.

    dec = fstchunk.decoder("meu", beta=0.5)     # or fstchunk.decoders.MEU(beta=0.5)
    dec.decode(lattice)                         # one sentence: a Decoding
    dec.decode_all(lattices)                    # many, on the batched engine
    dec.tags(lattices)                          # many, the tags alone (fastest)

Each decoder is a class with its ``name`` (what ``--decoder``, ``decoder=`` and the
torch layer's ``method=`` take), its ``scope`` (``"sentence"``: each sentence on its
own; ``"corpus"``: one joint decision over all of them), ``needs_probabilities``
(it reads the lattice as a distribution, so a margin-trained model must be
calibrated first: every decoder but MAP), ``needs_chunks`` (a chunk scheme: the
MEU decoders) and ``returns`` (what :attr:`Decoding.score` holds).  Its settings are
the constructor's, checked there, before any work:

============  ========  =====================  ==========================================
name          scope     settings               decision (score)
============  ========  =====================  ==========================================
map           sentence  —                      argmax Pr(y) (log Pr)
posterior     sentence  —                      argmax Σ_i Pr(y_i) (Σ marginals)
meu           sentence  beta, memory_budget,   argmax E[u] exactly (E[u], its certificate);
                        utility                u: conlleval's F, exact-boundary, per-type
                                               or macro F, a type map (.utilities);
                                               segments too (independent decisions)
meu-kbest     sentence  beta, k, memory_budget the k best paths reranked by E[F_β]
meu-corpus    corpus    beta, max_iter         max F_β of the corpus's expected counts
threshold     sentence  threshold              segments scored above the threshold
============  ========  =====================  ==========================================

Dense chains (score-array lattices) are decoded in ragged batches
(:mod:`fstchunk.structures.lattices`, :mod:`fstchunk.engine.inference`); lattices from machines
one at a time (:mod:`fstchunk.decoding.decode`).  Both give the same decisions.

**Adding a decoder** is one class (:class:`Decoder`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core.blas import one_blas_thread
from .decode import decode_meu, decode_meu_corpus
from ..engine import inference
from ..engine.ragged import RaggedBatch
from ..core.errors import InputError
from ..core.fbeta import check_beta, to_beta_sq
from .utilities import NAMES, utility as resolve_utility
from .segments import meu_set
from ..structures.lattice import Decoding, Lattice
from .rule import REGISTRY, Decoder
from ..structures.lattices import (apply, kbest_decisions, meu_decisions, no_path, of_batch,
                                   tag_lists)

#: the utilities MEU decodes for (``utility=``, ``--utility``; ``type:T`` for a type T)
UTILITIES = NAMES


# ---------------------------------------------------------------------- decoders
class MAP(Decoder):
    """Viterbi: the most probable valid sequence; score log Pr(y)."""
    name = "map"
    needs_probabilities = False
    needs_chunks = False
    returns = "log Pr(y)"

    def decode_one(self, lattice: Lattice) -> Decoding:
        return lattice.map()

    def decode_batch(self, batch: RaggedBatch, value: bool = True) -> list[Decoding]:
        paths, best = inference.viterbi(batch)
        no_path(best)
        logz = inference.transfer_of(batch).logz
        return [Decoding(t, float(s - z)) for t, s, z in zip(tag_lists(paths, batch), best, logz)]

    def tags(self, lattices: Sequence[Lattice], errors: str = "raise") -> list:
        lattices = list(lattices)
        self.check(lattices)

        def batched(batch: RaggedBatch) -> list[list[str]]:
            paths, best = inference.viterbi(batch)
            no_path(best)
            return tag_lists(paths, batch)
        return apply(lattices, batched, lambda i: lattices[i].map().tags, errors)


class Posterior(Decoder):
    """The valid sequence maximising the sum of token marginals; score that sum."""
    name = "posterior"
    needs_chunks = False
    returns = "Σ_i Pr(y_i = x_i)"

    def decode_one(self, lattice: Lattice) -> Decoding:
        return lattice.posterior()

    def decode_batch(self, batch: RaggedBatch, value: bool = True) -> list[Decoding]:
        marg = inference.marginals(inference.transfer_of(batch), batch)
        sp = batch.space
        zero = np.zeros(len(sp))
        post = RaggedBatch(marg, batch.lengths, np.where(sp.trans_ok, 0.0, -np.inf),
                           np.where(sp.start_ok, zero, -np.inf),
                           np.where(sp.end_ok, zero, -np.inf), sp, batch.index)
        paths, best = inference.viterbi(post)
        return [Decoding(t, float(s)) for t, s in zip(tag_lists(paths, batch), best)]


class MEU(Decoder):
    """Exact maximum expected F_β (Jansche §10, §21; :mod:`fstchunk.engine.meu`):
    score E[F_β] of the decision, ``gap`` its certificate (< 1e-12).  ``utility``:
    conlleval's F (a chunk correct with its boundaries and type; batched), or a
    utility of :mod:`fstchunk.decoding.utilities` by name or object — ``"exact"``
    (any type), ``"type:T"`` (the F of type T), ``"macro"`` (macro-averaged F, its
    certificate a bound), a :class:`~fstchunk.decoding.utilities.Utility` type map —
    one sentence at a time on its machine."""
    name = "meu"
    returns = "E[F_β(x | y)]"
    settings = ("beta", "memory_budget", "utility")

    structures = frozenset({"chain", "segments"})

    def __init__(self, beta: float = 1.0, memory_budget: int | None = None,
                 utility: str = "conlleval"):
        self.beta = check_beta(beta)
        self.memory_budget = _budget(memory_budget)
        resolve_utility(utility)                # an unknown name: InputError now
        self.utility = utility

    def decode_one(self, lattice: Lattice) -> Decoding:
        if self.utility == "conlleval":
            return lattice.meu(self.beta, self.memory_budget)
        return resolve_utility(self.utility).decode(lattice, self.beta, self.memory_budget)

    def choose_segments(self, scores, probabilities, threshold) -> list[int]:
        """The set of maximal E[F_β] under independent segment decisions
        (:func:`fstchunk.decoding.segments.meu_set`), most probable first."""
        if self.utility != "conlleval":
            raise InputError(f"utility={self.utility!r} decides tag sequences; segments are "
                             f"decided for the F of exact segment matches (leave utility out)",
                             cli=f"--utility {self.utility} decides tag sequences; segments "
                                 f"are decided for the F of exact segment matches")
        chosen, _ = meu_set(probabilities, self.beta)
        return sorted(chosen, key=lambda i: -probabilities[i])

    def decode_batch(self, batch: RaggedBatch, value: bool = True) -> list[Decoding]:
        """The batched exact MEU (:func:`fstchunk.structures.lattices.meu_decisions`)."""
        if self.utility != "conlleval":
            return [self.decode_one(lat) for lat in of_batch(batch)]
        return meu_decisions(batch, to_beta_sq(self.beta), value, self.memory_budget)

    def tags(self, lattices: Sequence[Lattice], errors: str = "raise") -> list:
        lattices = list(lattices)
        self.check(lattices)
        got = apply(lattices, lambda b: self.decode_batch(b, value=False),
                    lambda i: self.decode_one(lattices[i]), errors)
        return [d if isinstance(d, BaseException) else d.tags for d in got]


class MEUKBest(Decoder):
    """The ``k`` best paths reranked by exact E[F_β] (the first best kept); no
    certificate (gap = inf).  Dense chains: the batched list Viterbi in float64
    (:func:`fstchunk.structures.lattices.kbest_decisions`); machines: OpenFst's n-shortest."""
    name = "meu-kbest"
    returns = "E[F_β(x | y)]"
    settings = ("beta", "k", "memory_budget")

    def __init__(self, beta: float = 1.0, k: int = 20, memory_budget: int | None = None):
        self.beta = check_beta(beta)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        self.k = int(k)
        self.memory_budget = _budget(memory_budget)

    def decode_one(self, lattice: Lattice) -> Decoding:
        return decode_meu(lattice, beta=self.beta, method="kbest", k=self.k,
                          memory_budget=self.memory_budget)

    def decode_batch(self, batch: RaggedBatch, value: bool = True) -> list[Decoding]:
        return kbest_decisions(batch, to_beta_sq(self.beta), self.k)


class MEUCorpus(Decoder):
    """One joint decision for the whole list of lattices, maximising F_β of the
    corpus's expected counts (a ratio of expectations, not E[corpus F_β];
    :func:`fstchunk.decoding.decode.decode_meu_corpus`); every sentence's score is that ratio."""
    name = "meu-corpus"
    scope = "corpus"
    returns = "F_β of the expected counts (the corpus's)"
    settings = ("beta", "max_iter")

    def __init__(self, beta: float = 1.0, max_iter: int = 50):
        self.beta = check_beta(beta)
        if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) \
                or max_iter < 1:
            raise InputError(f"max_iter must be a positive integer, got {max_iter!r}")
        self.max_iter = int(max_iter)

    @one_blas_thread
    def decode_all(self, lattices: Sequence[Lattice], errors: str = "raise") -> list:
        lattices = list(lattices)
        self.check(lattices)
        tags, value = decode_meu_corpus(lattices, beta=self.beta, max_iter=self.max_iter)
        return [Decoding(t, value) for t in tags]

    def decode_one(self, lattice: Lattice) -> Decoding:
        return self.decode_all([lattice])[0]


class Threshold(Decoder):
    """A segment model's decision (McDonald et al. 2005): every candidate whose score is
    above the threshold (the model's, unless given)."""
    name = "threshold"
    needs_probabilities = False
    needs_chunks = False
    returns = "the candidates' scores"
    settings = ("threshold",)
    structures = frozenset({"segments"})

    def __init__(self, threshold: float | None = None):
        if threshold is not None and not np.isfinite(threshold):
            raise InputError(f"threshold must be a finite number, got {threshold!r}")
        self.threshold = None if threshold is None else float(threshold)

    def choose_segments(self, scores, probabilities, threshold) -> list[int]:
        thr = threshold if self.threshold is None else self.threshold
        return [i for i, s in enumerate(scores) if s > thr]


def _budget(memory_budget: Any) -> int | None:
    if memory_budget is None:
        return None
    if isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, np.integer)) \
            or memory_budget < 1:
        raise InputError(f"memory_budget must be a number of bytes >= 1 or None, "
                         f"got {memory_budget!r}")
    return int(memory_budget)


# ---------------------------------------------------------------------- the registry
def names(structure: str = "chain") -> tuple[str, ...]:
    """The names of the registered decoders of ``structure`` (``chain`` or
    ``segments``): the CLI's ``--decoder`` choices."""
    return tuple(n for n, c in REGISTRY.items() if structure in c.structures)


def decoder(spec: "str | Decoder", beta: float | None = None, k: int | None = None,
            memory_budget: int | None = None, as_options: bool = False,
            structure: str = "chain", **settings: Any) -> Decoder:
    """The decoder ``spec`` names (or ``spec`` itself, a :class:`Decoder`), with the
    settings it takes: an object whose ``decode(lattice)`` and ``tags(lattices)``
    decode one lattice or many (on the batched engine).

    A setting the decoder does not read is ignored when None or at its default
    (``beta=1.0``, ``k=20``) and refused otherwise: a β given to MAP would change nothing.

    Args:
        spec: a name of :data:`REGISTRY` (``map``, ``posterior``, ``meu``,
            ``meu-kbest``, ``meu-corpus``; ``threshold`` for segments) or a :class:`Decoder`.
        beta: β of F_β, for the MEU decoders.
        k: the number of paths of ``meu-kbest``.
        memory_budget: the bytes exact MEU may take per sentence.
        as_options: name refused settings as command-line options (``--beta``).
        structure: what is decoded: ``chain`` (lattices), ``segments``, ``joint``.
        **settings: further settings of the decoder, by name.

    Returns:
        The :class:`Decoder`.

    Raises:
        InputError: an unknown name, or one that does not decode ``structure`` (listing
            those that do), or a setting it refuses, naming it.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> tags = ("O", "B-PER", "I-PER")
        >>> lattice = fstchunk.Lattice.from_scores(tags, np.log(p), np.zeros((3, 3)))
        >>> meu = fstchunk.decoder("meu", beta=0.5)
        >>> meu.decode(lattice).tags
        ['B-PER', 'I-PER', 'O']
        >>> fstchunk.decoder("map", beta=0.5)
        Traceback (most recent call last):
        fstchunk.core.errors.InputError: decoder map reads no beta (its settings: none)
    """
    given = {"beta": beta, "k": k, "memory_budget": memory_budget, **settings}
    given = {key: v for key, v in given.items() if v is not None
             and not (key in _DEFAULTS and v == _DEFAULTS[key] and not isinstance(v, bool))}

    def named(key: str) -> str:
        return "--" + key.replace("_", "-") if as_options else key
    if isinstance(spec, Decoder):
        if given:
            raise InputError(f"give {', '.join(map(named, given))} to the decoder object "
                             f"({spec!r}), not beside it")
        cls = type(spec)
    else:
        cls = REGISTRY.get(spec) if isinstance(spec, str) else None
    if cls is None or structure not in cls.structures:
        what = {"chain": "tag sequences", "segments": "segments"}.get(structure, structure)
        known = "unknown decoder" if cls is None else f"decoder {cls.name} does not decode {what};"
        raise InputError(f"{known} {spec!r}: use one of {', '.join(names(structure))}"
                         if cls is None else f"{known} use one of {', '.join(names(structure))}")
    if isinstance(spec, Decoder):
        return spec
    extra = [key for key in given if key not in cls.settings]
    if extra:
        raise InputError(f"decoder {cls.name} reads no {', '.join(map(named, extra))} (its "
                         f"settings: {', '.join(map(named, cls.settings)) or 'none'})")
    return cls(**{key: v for key, v in given.items()})


#: the settings' defaults, which a decoder that does not read them ignores
_DEFAULTS = {"beta": 1.0, "k": 20, "utility": "conlleval"}


def decode_lattices(lattices: Sequence[Lattice], decoder_spec: "str | Decoder" = "map",
                    beta: float = 1.0, k: int = 20,
                    memory_budget: int | None = None) -> list[list[str]]:
    """The tags the decoder (a name of :data:`REGISTRY` or a :class:`Decoder`) picks for
    each lattice, in the lattices' scheme; ``meu-corpus`` decides the whole list
    jointly.  The first sentence error is raised (:mod:`fstchunk.decoding.batch` goes on past
    errors)."""
    return decoder(decoder_spec, beta=beta, k=k, memory_budget=memory_budget).tags(lattices)
