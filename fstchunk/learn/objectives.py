"""The training objectives of every model family, as objects in one registry.

An :class:`Objective` says what a training run minimises and how: its name (the
``--objective`` of ``fstchunk train``, ``--algorithm`` of ``joint train``), whether
it is a smooth function of θ built from **additive statistics** over sentences
(what :mod:`fstchunk.runtime.scale`'s executors sum over partitions) or is run by passes of
an online solver, the statistics it adds up and how :meth:`Objective.combine` turns
their sums into a value and gradient weights, its default λ, whether the scores it
trains are probabilities (MEU decoding reads them so; the others need a temperature
first, :meth:`fstchunk.models.crf.CRF.calibrate`), and which solver runs it.

**One L2 convention everywhere**: the objective is a *mean per training sentence*
(S sentences) plus the penalty λ‖θ‖²,

    P(θ) = (1/S) Σ_i ℓ_i(θ) + λ‖θ‖²    (ml: ℓ_i = −log Pr(y_i | x_i), max-margin: the
                                        structured hinge, meu: −E[F_β(x | y_i)])

except ``meu-corpus``, one corpus-level −F_β of expected counts, and the online
solvers (perceptron, MMVP, the segment learner), which have no λ (averaging
regularises them).  So one λ means about one strength whatever the corpus size;
a λ on the old summed scale divided by S is the same penalty (Jansche's slides §12,
§20; Lafferty et al. 2001; Taskar et al. 2003 with C = 1/(2λS)).

Model families implement the statistics of the objectives they support (the chain
models in :mod:`fstchunk.models.objectives`, the joint model's in
:mod:`fstchunk.models.joint.train`), keyed by these objects; no other module compares
objective names.

Pitfall: ``ml`` of the joint model and of the CRF are one objective (conditional
likelihood) over different structures; their statistics differ, their λ does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import InputError
from ..core.fbeta import parse_weights

#: how the summed statistics make the objective (:meth:`Objective.combine`)
MEAN, NEGATED_MEAN, CORPUS_RATIO = "mean", "negated mean", "corpus ratio"


@dataclass(frozen=True)
class Objective:
    """One training objective (module doc)."""

    name: str
    #: one line for ``--help``
    summary: str
    #: the solver that runs it: "lbfgs" (smooth), or an online solver's name
    solver: str
    #: default λ of λ‖θ‖² on the per-sentence scale; None: the objective has no λ
    default_l2: float | None
    #: whether the trained scores are log-probabilities (MEU decoding needs that)
    probabilistic: bool
    #: how summed statistics make the value (smooth objectives only)
    combination: str | None = None
    #: whether F_β's β matters (meu, meu-corpus, max-margin with the F loss)
    uses_beta: bool = False
    #: whether the loss Δ of a margin matters (max-margin)
    uses_loss: bool = False
    #: whether λ must be > 0 (max-margin: C = 1/(2λS) finite)
    needs_l2: bool = False
    #: the solver's default stopping tolerance (L-BFGS's gradient, BCFW's duality gap)
    default_tol: float | None = None
    #: the losses Δ of its margin (``--loss``), the first the default
    losses: tuple[str, ...] = ()
    #: whether the CLI spreads it over all usable cores when no ``--workers`` is given
    #: (an evaluation costs many times an ML one: meu's count tables, max-margin's
    #: oracles; ML's own statistics gain little from processes on a few cores)
    spread_by_default: bool = False

    def __reduce__(self):
        """Pickled by name: a worker's copy is the registry's own object, so that
        ``objective is ML`` holds there too."""
        return objective, (self.name,)

    @property
    def family(self) -> str:
        """The registry's name: ``meu-weighted`` for ``meu-weighted:LOC=2``."""
        return self.name.partition(":")[0]

    def among(self, objectives) -> bool:
        """Whether ``objectives`` (what a model trains) hold this one's family."""
        return any(self.family == o.name for o in objectives)

    @property
    def spreads(self) -> bool:
        """Whether an executor (:mod:`fstchunk.runtime.scale`) spreads its work: the additive
        statistics of the objectives with a value (the smooth ones, and max-margin's
        hinge, BCFW's certificate); the online learners run in one process."""
        return self.combination is not None

    @property
    def smooth(self) -> bool:
        """Whether L-BFGS minimises it (a function of θ with a gradient)."""
        return self.solver == "lbfgs"

    def l2(self, given: float | None) -> float:
        """λ to train with: ``given``, or the default; InputError for a λ the objective
        cannot take (a negative or non-finite one, any λ for one without, 0 where
        it needs one)."""
        if given is None:
            return 0.0 if self.default_l2 is None else self.default_l2
        if isinstance(given, bool) or not isinstance(given, (int, float, np.floating)) \
                or not np.isfinite(given) or given < 0:
            raise InputError(f"l2 must be a finite number >= 0, got {given!r}")
        if self.default_l2 is None and given != 0:
            raise objective_error(f"{{}} has no λ (its averaging regularises); got l2 = "
                                  f"{given!r}", self.name)
        if self.needs_l2 and given == 0:
            raise objective_error("{} needs λ > 0 (C = 1/(2λN) finite)", self.name)
        return float(given)

    def combine(self, values: np.ndarray, sentences: int, beta_sq: float = 1.0
                ) -> tuple[float, np.ndarray]:
        """The value from the corpus's summed statistics and the weights w of its
        gradient Σ_j w_j·∇values_j: Σ/S (``mean``), −Σ/S (``negated mean``), or
        −(1+β²)·E[tp] / (E[m(x)] + β²·m(y)) for statistics (E[tp], E[m(x)], m(y))
        (``corpus ratio``, ``beta_sq`` = β²; by the quotient rule; −1 and flat when
        there is no chunk anywhere: F = 1)."""
        s = 1.0 / max(sentences, 1)
        if self.combination == MEAN:
            return float(values[0]) * s, np.array([s])
        if self.combination == NEGATED_MEAN:
            return -float(values[0]) * s, np.array([-s])
        if self.combination != CORPUS_RATIO:
            raise objective_error("{} is run by passes of its solver, not as a function "
                                  "of θ", self.name)
        tp, m_hyp, m_gold = (float(v) for v in values)
        den = m_hyp + beta_sq * m_gold
        if den <= 0:
            return -1.0, np.zeros(2)
        return -(beta_sq + 1) * tp / den, np.array([-(beta_sq + 1) / den,
                                                    (beta_sq + 1) * tp / den ** 2])


#: L-BFGS's default gradient tolerance: absolute, on the per-sentence scale, so far below
#: scipy's (1e-9 ≈ 1e-5 on the summed objective over CoNLL-2000's 8936 sentences)
LBFGS_TOL = 1e-9

ML = Objective("ml", "conditional log-likelihood (the mean per sentence)", "lbfgs", 1e-6,
               True, MEAN, default_tol=LBFGS_TOL)
MEU = Objective("meu", "expected sentence F_β, E[F_β(x | y)] per sentence", "lbfgs", 1e-6,
                True, NEGATED_MEAN, uses_beta=True, default_tol=LBFGS_TOL,
                spread_by_default=True)
#: λ as meu's, not tuned for it
MEU_EXACT = Objective("meu-exact", "expected sentence exact-boundary F_β (a chunk right "
                      "with its boundaries, any type: SemEval's exact mode) per sentence",
                      "lbfgs", 1e-6, True, NEGATED_MEAN, uses_beta=True,
                      default_tol=LBFGS_TOL, spread_by_default=True)
#: λ as meu's, not tuned for it
MEU_MACRO = Objective("meu-macro", "expected sentence macro-averaged F_β (the mean over "
                      "the model's types of the F_β of that type's chunks alone) per "
                      "sentence", "lbfgs", 1e-6, True, NEGATED_MEAN, uses_beta=True,
                      default_tol=LBFGS_TOL, spread_by_default=True)
#: λ as meu's, not tuned for it
MEU_PARTIAL = Objective("meu-partial", "expected sentence F_β of SemEval-2013's partial "
                        "match (½ credit for an overlap, 1 for the span: eval --mode partial)",
                        "lbfgs", 1e-6, True, NEGATED_MEAN, uses_beta=True,
                        default_tol=LBFGS_TOL, spread_by_default=True)
#: λ as meu's, not tuned for it
MEU_TYPE = Objective("meu-type", "expected sentence F_β of SemEval-2013's type match (a "
                     "chunk of its type overlapping it is enough: eval --mode type)",
                     "lbfgs", 1e-6, True, NEGATED_MEAN, uses_beta=True,
                     default_tol=LBFGS_TOL, spread_by_default=True)
#: λ as meu's, not tuned for it; trained as ``meu-weighted:T=w,...`` (the weights in the name)
MEU_WEIGHTED = Objective("meu-weighted", "expected sentence per-type weighted F_β, named "
                         "with its weights: meu-weighted:T=w,... (a chunk of type T counts w "
                         "times, a whole number >= 1; decode --utility weighted:T=w,...)",
                         "lbfgs", 1e-6, True, NEGATED_MEAN, uses_beta=True,
                         default_tol=LBFGS_TOL, spread_by_default=True)
MEU_CORPUS = Objective("meu-corpus", "F_β of the corpus's expected counts", "lbfgs", 1e-6,
                       True, CORPUS_RATIO, uses_beta=True, default_tol=LBFGS_TOL)
#: λ chosen a priori (not tuned): Tang et al.'s C = 1 on the 8936 CoNLL-2000 training
#: sentences, λ = 1/(2·C·N) = 5.6e-5, rounded
MAX_MARGIN = Objective("max-margin", "structured hinge (loss --loss), solved by "
                       "block-coordinate Frank-Wolfe to a duality gap <= --tol", "bcfw",
                       5e-5, False, MEAN, uses_beta=True, uses_loss=True, needs_l2=True,
                       default_tol=1e-3, losses=("hamming", "f"), spread_by_default=True)
PERCEPTRON = Objective("perceptron", "the averaged perceptron (passes; stops after a pass "
                       "without mistakes)", "perceptron", None, False)
MMVP = Objective("mmvp", "the averaged perceptron with the max-margin step (Shimizu & Haas, "
                 "Algorithm 4.3)", "mmvp", None, False)
PA = Objective("pa", "passive-aggressive passes (CRFsuite's -a pa: types 0, I, II, "
               "error-sensitive cost, averaging)", "pa", None, False)
AROW = Objective("arow", "adaptive regularisation of weight vectors (CRFsuite's -a arow)",
                 "arow", None, False)
MULTILABEL = Objective("multilabel", "online large-margin multilabel learning with "
                       "Hildreth's updates (McDonald et al. 2005, Fig. 4)", "hildreth",
                       None, False)

OBJECTIVES: dict[str, Objective] = {o.name: o for o in (
    ML, MEU, MEU_EXACT, MEU_MACRO, MEU_PARTIAL, MEU_TYPE, MEU_WEIGHTED, MEU_CORPUS, MAX_MARGIN, PERCEPTRON,
    MMVP, PA, AROW, MULTILABEL)}
"""Every training objective, by the name ``objective=`` and ``--objective`` take.
The smooth ones minimise a mean per sentence plus λ‖θ‖²,
$\\frac{1}{S} \\sum_i \\ell_i(\\theta) + \\lambda \\lVert\\theta\\rVert^2$ (module doc);
the others run passes of an online solver (no λ).

| name | what is minimised or run | default λ |
|---|---|---|
| ``ml`` | $-\\log p(y_i \\mid x_i)$ (conditional likelihood) | 1e-6 |
| ``meu`` | $-\\mathbb{E}[F_\\beta]$ per sentence (Jansche's slides) | 1e-6 |
| ``meu-exact`` | $-\\mathbb{E}[F_\\beta]$ of the exact-boundary utility per sentence (any type) | 1e-6 (meu's) |
| ``meu-macro`` | $-\\mathbb{E}$ of the macro-averaged $F_\\beta$ per sentence (the mean over types of each type's $F_\\beta$) | 1e-6 (meu's) |
| ``meu-partial`` | $-\\mathbb{E}[F_\\beta]$ of SemEval-2013's partial match per sentence (½ credit for an overlap) | 1e-6 (meu's) |
| ``meu-type`` | $-\\mathbb{E}[F_\\beta]$ of SemEval-2013's type match per sentence (a chunk of its type overlapping it is enough) | 1e-6 (meu's) |
| ``meu-weighted:T=w,...`` | $-\\mathbb{E}[F_\\beta]$ per sentence with a chunk of type T counting w times (in tp and both counts) | 1e-6 (meu's) |
| ``meu-corpus`` | −F_β of the corpus's expected counts | 1e-6 |
| ``max-margin`` | the structured hinge, Hamming or 1 − F_β loss (Tang et al.) | 5e-5 |
| ``perceptron`` | averaged perceptron passes | — |
| ``mmvp`` | the perceptron with the max-margin step (Shimizu & Haas; joint model) | — |
| ``pa``, ``arow`` | CRFsuite's passive-aggressive and AROW passes | — |
| ``multilabel`` | McDonald et al.'s online multilabel learner (segment model) | — |

Examples:
    >>> import fstchunk
    >>> ml = fstchunk.OBJECTIVES["ml"]
    >>> ml.default_l2, ml.probabilistic, ml.solver
    (1e-06, True, 'lbfgs')
    >>> [name for name, o in fstchunk.OBJECTIVES.items() if o.default_l2 is None]
    ['perceptron', 'mmvp', 'pa', 'arow', 'multilabel']
"""


def objective(name: str | Objective, among: tuple[Objective, ...] | None = None) -> Objective:
    """The objective called ``name`` (an Objective passes through); InputError naming
    the choices when there is none, or when it is not ``among`` those a model trains.
    ``meu-weighted:T=w,...`` is :data:`MEU_WEIGHTED` with its weights in the name
    (written back in one form: ``meu-weighted:LOC=2,PER=3``)."""
    if isinstance(name, Objective):
        found = name
    elif isinstance(name, str) and name.partition(":")[0] == MEU_WEIGHTED.name:
        if not name.partition(":")[2].strip():
            return objective(MEU_WEIGHTED)              # refused: no weights
        try:
            weights = parse_weights(name.partition(":")[2])
        except InputError:
            raise InputError(f"objective {name!r}: each weight is TYPE=W with a whole W >= 1 "
                             f"(e.g. meu-weighted:LOC=2,PER=3)") from None
        found = replace(MEU_WEIGHTED, name=MEU_WEIGHTED.name + ":" + ",".join(
            f"{t}={w}" for t, w in weights.items()))
    else:
        found = OBJECTIVES.get(name)
    if found is MEU_WEIGHTED:
        raise InputError("objective 'meu-weighted' needs its weights: meu-weighted:TYPE=W,... "
                         "(e.g. meu-weighted:LOC=2)")
    choices = among if among is not None else tuple(OBJECTIVES.values())
    if found is None or not found.among(choices):
        shown = name.name if isinstance(name, Objective) else name      # not its repr
        listed = (o.name + (":TYPE=W,..." if o is MEU_WEIGHTED else "") for o in choices)
        raise InputError(f"unknown objective {shown!r}; use one of {', '.join(listed)}")
    return found


def objective_error(template: str, name: str) -> InputError:
    """One InputError of ``template`` (``{}`` where the objective is named): to Python
    users ``objective='NAME'``, on the command line ``--objective NAME``."""
    return InputError(template.format(f"objective={name!r}"),
                      cli=template.format(f"--objective {name}"))


def with_loss(among: tuple[Objective, ...] | None = None, python: bool = False) -> str:
    """``--objective A`` (or ``A or B``; ``python``: ``objective='A'``) for the objectives
    that take a ``--loss``."""
    return " or ".join(f"objective={o.name!r}" if python else f"--objective {o.name}"
                       for o in (among or OBJECTIVES.values()) if o.uses_loss)


def names(among: tuple[Objective, ...]) -> tuple[str, ...]:
    """The names of ``among`` (the CLI's choices)."""
    return tuple(o.name for o in among)


def help_text(among: tuple[Objective, ...]) -> str:
    """``name (summary; default λ ...)`` for each of ``among``: the CLI's help."""
    def lam(o: Objective) -> str:
        return "no λ" if o.default_l2 is None else f"default λ {o.default_l2:g}"
    return "; ".join(f"{o.name} ({o.summary}; {lam(o)})" for o in among)
