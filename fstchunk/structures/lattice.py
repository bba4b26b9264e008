"""Lattices: distributions over the valid tag sequences of one sentence.

A :class:`Lattice` is built from score arrays of any first-order tagger
(:meth:`Lattice.from_scores`: a linear-chain CRF, an HMM's log-probabilities, a
neural network's emission scores plus a transition matrix) or from any weighted
acceptor over the tag alphabet (:meth:`Lattice.from_fst`).  Either way:

    Pr(y) = exp(score(y)) / Z   over the *valid* sequences y of the scheme,

which the machine path gets by composing with the scheme's validity acceptor and
pushing the weights (:attr:`Lattice.fst` is normalised: its paths sum to one).

Internally every lattice is a sequence of layers: layer i holds the states after
token i, each with the tag it was entered by, and a dense matrix of log weights
between consecutive layers.  For score arrays the states are the tags; for a
machine they are its states after composing with a one-tag history acceptor (so
that each state knows its tag).  All numerical algorithms in
:mod:`fstchunk.engine` run on these layers, in log space or scaled, so a 300-token
sentence neither underflows nor overflows.

With ``scheme=None`` (:data:`fstchunk.schemes.tagspace.UNCONSTRAINED`) the tags are any labels
and every sequence is valid: an ordinary linear chain (no validity machine is
composed; chunk operations refuse it, naming ``scheme=None``).

Pitfalls: score arrays are rejected if they contain NaN or ±inf (use the scheme,
not -inf, to forbid transitions); the tag list fixes the column order of the
arrays and of :meth:`marginals`; a machine's paths must all have the same length.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterator, Sequence

import numpy as np
import pynini

from ..schemes import encodings as enc
from ..core.errors import InputError
from ..core.blas import one_blas_thread
from ..engine.spans import dense_marginals
from ..grammars.models import score_lattice
from ..engine import inference
from ..engine.chain import (Layers, entropy, forward, gauge, restrict, sample_states,
                           token_marginals, viterbi)
from ..engine.expectation import ExpectedF, from_count_table, tp_count_table
from ..engine.meu import exact_meu
from ..engine.ragged import RaggedBatch
from .decision import Decoding
from .enumeration import LIMIT, layer_paths
from ..core.fbeta import to_beta_sq
from ..grammars.annotation import mask_acceptor
from .layers import (chain_batch, chain_layers, layers_of, normalise, to_space_labels,
                     valid_machine)
from ..core.scorecheck import chain_scores
from ..schemes.tagseq import tag_list
from ..schemes.tagspace import TagSpace, canonical


class Lattice:
    """One sentence's distribution over the valid tag sequences of a scheme:
    $p(y \\mid x) = \\exp \\mathrm{score}(y) / Z$ over the valid $y$ of length ``n``
    (module doc).  Get one from a trained model, ``model.lattices(sentences)`` (one
    per sentence), from any tagger's score arrays, :meth:`from_scores`, or from a
    weighted acceptor, :meth:`from_fst`.  Its queries: :meth:`map` (Viterbi),
    :meth:`posterior`, :meth:`meu` (maximum expected F_β), :meth:`expected_f`,
    :meth:`marginals`, :meth:`chunk_marginals`, :meth:`entropy`,
    :meth:`log_partition`, :meth:`log_prob`, :meth:`sample`, :meth:`constrained`;
    many lattices at once: :func:`fstchunk.decoder`.

    Args:
        tags: the tags, in the column order of score arrays and marginals.
        scheme: the scheme whose valid sequences it holds (``None``: any labels).
        layers: the numerical form (:class:`fstchunk.engine.chain.Layers`).
        raw_fst: the machine the layers came from, or a function that builds it.
        scores: (emissions, transitions, start, end) of a dense chain, instead of
            ``layers``.
        allowed: an (n, len(tags)) tag mask on ``scores``.

    Raises:
        InputError: neither ``layers`` nor ``scores``.
        SchemeError: a tag that is not of ``scheme``.

    Examples:
        >>> import numpy as np, fstchunk
        >>> p = [[.1, .8, .1], [.3, .1, .6], [.8, .1, .1]]     # token x tag
        >>> lattice = fstchunk.Lattice.from_scores(("O", "B-PER", "I-PER"), np.log(p),
        ...                                        np.zeros((3, 3)))
        >>> lattice
        Lattice(n=3, scheme='IOB2', tags=3)
        >>> lattice.map().tags, lattice.marginals()[1].round(2)
        (['B-PER', 'I-PER', 'O'], array([0.3 , 0.11, 0.59]))
    """

    def __init__(self, tags: Sequence[str], scheme: str, layers: Layers | None = None,
                 raw_fst: pynini.Fst | Callable[[], pynini.Fst] | None = None,
                 scores: tuple | None = None, allowed: np.ndarray | None = None):
        # dense chains build their layers on first use (the engine reads the scores)
        self.space = TagSpace.of(tags, canonical(scheme))
        if layers is None and scores is None:
            raise InputError("a lattice needs its layers or its score arrays")
        if layers is not None:
            self.__dict__["layers"] = layers
        self.n = len(layers.weights) if layers is not None else len(scores[0])
        self._raw_fst = raw_fst
        self.scores = scores            # (emissions, transitions, start, end) if from_scores
        self.allowed = allowed          # (n, L) bool: a tag mask on the scores, or None

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags, in the column order of score arrays and marginals."""
        return self.space.tags

    @property
    def scheme(self) -> str:
        return self.space.scheme

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_scores(cls, tags: Sequence[str], emissions, transitions, start=None, end=None,
                    scheme: str = "IOB2", warn: bool = True) -> "Lattice":
        """A linear-chain lattice from a tagger's scores (log potentials):
        $\\mathrm{score}(y) = \\mathrm{start}_{y_1} + \\sum_i \\mathrm{emissions}_{i, y_i}
        + \\sum_i \\mathrm{transitions}_{y_{i-1}, y_i} + \\mathrm{end}_{y_n}$ over the
        valid sequences of ``scheme``, $p(y) \\propto \\exp \\mathrm{score}(y)$.

        Args:
            tags: the columns' tags, e.g. ``("O", "B-PER", "I-PER")``.
            emissions: an (n, len(tags)) array of scores per token and tag.
            transitions: a (len(tags), len(tags)) array, [previous, next].
            start: scores of the first tag (``None``: 0).
            end: scores of the last tag (``None``: 0).
            scheme: the scheme whose valid sequences the lattice holds.
            warn: warn of rows that look like probabilities, not log scores
                (:mod:`fstchunk.core.scorecheck`; ``False`` for scores of fstchunk's own making).

        Returns:
            The :class:`Lattice`.

        Raises:
            InputError: arrays of the wrong shape or with NaN, naming them.
            SchemeError: a tag that is not of ``scheme``.

        Examples:
            >>> import numpy as np, fstchunk
            >>> tags = ("O", "B-PER", "I-PER")
            >>> lattice = fstchunk.Lattice.from_scores(tags, np.zeros((2, 3)), np.zeros((3, 3)))
            >>> round(float(np.exp(lattice.log_partition())))   # valid sequences: O O, O B, B O, B B, B I
            5
        """
        space = TagSpace.of(tags, canonical(scheme))
        return cls(space.tags, scheme,
                   scores=chain_scores(len(space), emissions, transitions, start, end, warn))

    @classmethod
    def of_chain(cls, space: TagSpace, emissions: np.ndarray, transitions: np.ndarray,
                 start: np.ndarray, end: np.ndarray) -> "Lattice":
        """:meth:`from_scores` for arrays a model has already checked (float64, shapes
        of ``space``): no checks, no copies — the many lattices of a model's batch."""
        lat = cls.__new__(cls)
        lat.space, lat.n, lat._raw_fst, lat.allowed = space, len(emissions), None, None
        lat.scores = (emissions, transitions, start, end)
        return lat

    @functools.cached_property
    def layers(self) -> Layers:
        """The lattice's layers (:class:`fstchunk.engine.chain.Layers`; a dense chain's
        from its scores and tag mask: :func:`.layers.chain_layers`)."""
        return chain_layers(self.space, self.scores, self.allowed)

    @classmethod
    def from_fst(cls, fst: pynini.Fst, tags: Sequence[str], scheme: str = "IOB2") -> "Lattice":
        """Lattice from any weighted acceptor over ``tags`` (weights: -log score).

        Labels are matched by name if ``fst`` has an input symbol table, else they
        must be the labels of :class:`TagSet` (the shared symbol table).
        """
        space = TagSpace.of(tags, canonical(scheme))
        f = to_space_labels(fst, space)
        return cls(space.tags, space.scheme, layers_of(f, space), raw_fst=f)

    def constrained(self, allowed: np.ndarray) -> "Lattice":
        """This distribution conditioned on a product constraint A = Π_i allowed_i
        (allowed[i, l]: token i may take ``tags[l]``; :mod:`fstchunk.io.annotation`):
        Pr_A(y) ∝ exp(score(y)) on valid y ∈ A.  Fast path: the layers restricted
        (:func:`fstchunk.engine.chain.restrict`); machine: this lattice's machine ∘ the
        mask's acceptor (:func:`fstchunk.grammars.annotation.mask_acceptor`).  So
        ``constrained(a).log_partition()`` is log Σ_{y ∈ A ∩ valid} exp(score(y))."""
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != (self.n, len(self.tags)):
            raise InputError(f"allowed has shape {allowed.shape}, expected "
                             f"{(self.n, len(self.tags))} (tokens, tags)")

        def machine() -> pynini.Fst:
            acc = mask_acceptor(allowed, self.space)
            return pynini.compose(self.unnormalised_fst(), acc.arcsort("ilabel")).connect()
        if self.scores is not None:
            both = allowed if self.allowed is None else allowed & self.allowed
            return Lattice(self.tags, self.scheme, raw_fst=machine, scores=self.scores,
                           allowed=both)
        return Lattice(self.tags, self.scheme, restrict(self.layers, allowed), raw_fst=machine)

    # ------------------------------------------------------------------ machines
    @functools.cached_property
    def fst(self) -> pynini.Fst:
        """The normalised lattice machine (log64): model ∘ validity, weights pushed."""
        return normalise(self.unnormalised_fst())

    def unnormalised_fst(self) -> pynini.Fst:
        """model ∘ validity acceptor, before normalisation (weights -score)."""
        if callable(self._raw_fst):        # a builder, run on first use
            raw = to_space_labels(self._raw_fst(), self.space)
        elif self._raw_fst is not None:
            raw = self._raw_fst
        else:
            e, t, s, en = self.scores
            raw = score_lattice(self.space.labels, e, t, s, en)
        return valid_machine(raw, self.space, self.n)

    # ------------------------------------------------------------------ inference
    @functools.cached_property
    def chain(self) -> Layers:
        """The layers as a stochastic chain (:func:`fstchunk.engine.chain.gauge`):
        the same distribution, each row a conditional distribution over next
        states; what the counting and expectation recursions run on."""
        return gauge(self.layers)

    @one_blas_thread
    def log_partition(self) -> float:
        """log Z = log Σ_{valid y} exp(score(y))."""
        return forward(self.layers)[1]

    @one_blas_thread
    def marginals(self) -> np.ndarray:
        """Token marginals Pr(y_i = tag), shape (n, len(tags)): forward-backward on the
        stochastic chain (:attr:`chain`), where the log forward is the log state
        distribution itself, so no α + β − log Z of size n·(score scale) is formed."""
        return token_marginals(self.chain, len(self.tags))

    @one_blas_thread
    def chunk_marginals(self) -> np.ndarray:
        """Pr((type, s, e) ∈ chunks(y)), shape (len(types), n, n+1), indexed [type, s, e]
        with types in ``self.space.types`` order and e exclusive (one sweep over open
        chunks, O(T·n²) memory: :func:`fstchunk.engine.spans.dense_marginals`)."""
        self.space.require_chunks("chunk marginals")
        return dense_marginals(self)

    @one_blas_thread
    def entropy(self) -> float:
        """H(y) = −Σ_y Pr(y) log Pr(y) in nats: the chain rule over the stochastic
        chain's transition probabilities (no cancellation at any score scale)."""
        if self.scores is not None:
            batch = self.batch()
            return float(inference.entropy(inference.transfer_of(batch), batch)[0])
        return entropy(self.chain)

    @one_blas_thread
    def map(self) -> Decoding:
        """The most probable valid sequence (Viterbi) and its log probability (a machine
        with several states per tag: the tags of its best path, e.g. the joint model's)."""
        if self.scores is not None:
            batch = self.batch()
            paths, best = inference.viterbi(batch)
            if not np.isfinite(best[0]):
                raise InputError("the lattice gives no weight to any valid sequence")
            logz = float(inference.transfer_of(batch).logz[0])
            return Decoding([self.tags[i] for i in paths[0]], float(best[0]) - logz)
        idx, _ = viterbi(self.layers)
        tags = [self.tags[i] for i in idx]
        return Decoding(tags, self.log_prob(tags))

    @one_blas_thread
    def posterior(self) -> Decoding:
        """The valid sequence maximising Σ_i Pr(y_i = x_i), and that sum."""
        L = len(self.tags)
        post = Lattice.from_scores(self.tags, self.marginals(), np.zeros((L, L)),
                                   scheme=self.scheme, warn=False)  # marginals summed
        paths, best = inference.viterbi(post.batch())
        return Decoding([self.tags[i] for i in paths[0]], float(best[0]))

    @one_blas_thread
    def meu(self, beta: float = 1.0, memory_budget: float | None = None) -> Decoding:
        """The chunking of maximum expected F_β (standard β), that E[F_β], and the
        certified gap (exact MEU, :func:`fstchunk.decoding.decode.decode_meu`)."""
        self.space.require_chunks("MEU decoding")
        beta_sq = to_beta_sq(beta)
        if memory_budget is not None and not memory_budget > 0:
            raise InputError(f"memory_budget must be a positive number of bytes, got "
                             f"{memory_budget!r}")
        types = self.space.types
        best = self.map()
        map_chunks = [(types.index(t), s, e)
                      for t, s, e in enc.tags_to_chunks(best.tags, self.scheme)]
        res = exact_meu(self, beta_sq, map_chunks, memory_budget=memory_budget,
                        map_logprob=best.score)
        chunks = [(types[t], s, e) for t, s, e in res.chunks]
        return Decoding(enc.chunks_to_tags(chunks, self.n, self.scheme), res.value, res.gap)

    @one_blas_thread
    def expected_f(self, reference: Sequence[str] | None = None,
                   hypothesis: Sequence[str] | None = None, beta: float = 1.0) -> ExpectedF:
        """E[tp], E[P], E[R], E[F_β] of a fixed ``reference`` (x ~ the lattice: the
        training direction) or ``hypothesis`` (y ~ the lattice: decoding), exactly one,
        by the expectation-semiring recursion (:func:`fstchunk.decoding.expected.expected_f`
        gives the same by composing machines, ``method="fst"``)."""
        beta_sq = to_beta_sq(beta)
        if (hypothesis is None) == (reference is None):
            raise InputError("give exactly one of hypothesis= (decoding) or reference= "
                             "(training)")
        direction = "decoding" if hypothesis is not None else "training"
        chunks = self.check_chunking(list(hypothesis if hypothesis is not None else reference),
                                     "hypothesis" if hypothesis is not None else "reference")
        Z, T = tp_count_table(self, chunks)
        return from_count_table(Z, T, len(chunks), beta_sq, direction)

    def enumerate(self, limit: int = LIMIT) -> Iterator[tuple[tuple[str, ...], float]]:
        """Every valid sequence y of non-zero weight and log Pr(y) = score(y) − log Z,
        sorted by tag index: the oracle of every query above, for small lattices
        (:mod:`fstchunk.structures.enumeration`); InputError above ``limit`` state paths."""
        paths = layer_paths(self.layers, limit, f"the lattice of {self.n} tokens and "
                            f"{len(self.tags)} tags")
        return ((tuple(self.tags[i] for i in row), float(lp))
                for row, lp in zip(paths.tags, paths.log_probs))

    def sample(self, k: int = 1, seed: int | np.random.Generator | None = None
               ) -> list[tuple[str, ...]]:
        """``k`` tag sequences drawn independently from Pr(y | x), forward on the
        stochastic chain (:func:`fstchunk.engine.chain.sample_states`), exact at any
        score scale; ``seed`` an int or a numpy Generator for reproducible draws."""
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
            raise InputError(f"k must be an integer >= 0, got {k!r}")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        chain = self.chain
        states = sample_states(chain, int(k), rng)
        return [tuple(self.tags[lab[q]] for lab, q in zip(chain.labels, row)) for row in states]

    def batch(self) -> RaggedBatch:
        """This dense chain as a ragged batch of one (:mod:`fstchunk.engine.ragged`)."""
        if self.scores is None:
            raise InputError("a lattice from a machine is no dense chain: it has no batch form")
        return chain_batch(self.space, self.scores, self.allowed)

    @one_blas_thread
    def log_prob(self, seq: Sequence[str]) -> float:
        """log Pr(seq); -inf for a valid sequence the model excludes.

        Raises ValueError for a sequence of the wrong length, unknown tags, or an
        invalid sequence."""
        idx = self.check_sequence(seq, "sequence")
        lay = self.layers                      # the sub-chain of the states seq enters
        on = [np.flatnonzero(lab == t) for lab, t in zip(lay.labels, idx)]
        if any(len(o) == 0 for o in on):       # a machine with no state of that tag there
            return -np.inf
        prev = [np.array([0])] + on[:-1]
        sub = Layers([wi[np.ix_(p, o)] for wi, p, o in zip(lay.weights, prev, on)],
                     [lab[o] for lab, o in zip(lay.labels, on)], lay.final[on[-1]])
        _, score = forward(sub)
        return score - self.log_partition()

    def check_sequence(self, seq: Sequence[str], what: str) -> list[int]:
        if len(tag_list(seq, what)) != self.n:
            raise InputError(f"{what} has {len(seq)} tags but the lattice has {self.n} tokens")
        if self.space.chunked:
            enc.validate(list(seq), self.scheme)
        pos = {t: i for i, t in enumerate(self.tags)}
        out = []
        for i, t in enumerate(seq):
            if t not in pos:
                raise InputError(f"{what}: position {i}: tag {t!r} is not among the lattice's "
                                 f"tags {', '.join(self.tags)}")
            out.append(pos[t])
        return out

    def check_chunking(self, seq: Sequence[str], what: str) -> list[tuple[str, int, int]]:
        """The chunks of a fixed sequence compared against the lattice (a hypothesis or
        a reference): the lattice's length, valid in its scheme, chunk types among
        its types — but any tag of the scheme, since a decision need not be a
        sequence the model can produce (MEU may answer O where the lattice's tag
        list has no O; it lacks no other tag: :func:`.tagspace.check_expresses`)."""
        self.space.require_chunks(f"the chunks of a {what}")
        if len(tag_list(seq, what)) != self.n:
            raise InputError(f"{what} has {len(seq)} tags but the lattice has {self.n} tokens")
        seq = list(seq)
        enc.validate(seq, self.scheme)
        chunks = enc.tags_to_chunks(seq, self.scheme)
        for t, s, _ in chunks:
            if t not in self.space.types:
                raise InputError(f"{what}: position {s}: chunk type {t!r} is not among the "
                                 f"lattice's types {', '.join(self.space.types) or '(none)'}")
        return chunks

    def __repr__(self) -> str:
        return f"Lattice(n={self.n}, scheme={self.scheme!r}, tags={len(self.tags)})"
