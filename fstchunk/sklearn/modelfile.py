"""The model file of :class:`fstchunk.sklearn.CRF`: a CRFsuite model file, as
sklearn-crfsuite's (``model_filename``, ``modelfile.name``, ``keep_tempfiles``), that
python-crfsuite's ``Tagger().open()`` reads and tags with; ``tagger_.info()`` and
``tagger_.dump()`` as python-crfsuite gives them for that file.

**What the file holds** (:func:`to_crfsuite`): the model's labels (all its tags, the
tags a chunk scheme adds included), the attributes with a non-zero state weight, the
non-zero state and transition weights — and, for a chunk scheme, each transition the
scheme forbids (IOB2's ``O → I-X``, ...) as a transition feature of weight
:data:`FORBIDDEN` (−10⁶): CRFsuite has no −∞, and no path through such a transition
can win CRFsuite's Viterbi.  CRFsuite has no start or end weights; a tag that may not
open a sentence (IOB2's ``I-X``) or close one (IOE2's ``I-X``) is kept from there
through an *anchor*, an attribute every training token had with value 1 (the tutorial's
``"bias": 1.0``; :func:`anchor`): its weight for such a tag is lowered by
:data:`SHIFT` (300) per end the tag may not take, and each allowed transition into
(a tag that may not open) or out of it (one that may not close) raised by as much,
so that every valid sequence of tokens that carry the anchor keeps its score (to
rounding) and an invalid first or last tag loses 300; a token without the anchor (a
feature function other than training's) would get CRFsuite's tagger wrong there.  The file then gives CRFsuite's tagger
fstchunk's distribution over valid sequences (the same Viterbi path, marginals and
probabilities up to a factor e^-300 on invalid ones).  Without an anchor the file
cannot keep CRFsuite's tagger from opening a sentence with ``I-X``: writing it warns
(:class:`~fstchunk.core.errors.FstchunkWarning`).  ``tagger_.info()`` and the
estimator's ``state_features_`` and ``transition_features_`` show the model's own
weights, not these shifted ones.

**Reading** (:func:`load`): a CRFsuite file written by CRFsuite is loaded as the
unconstrained chain over its labels — CRFsuite's own model, the same predictions
(:func:`fstchunk.models.crfsuite_import.from_crfsuite`); one written by fstchunk (its
forbidden transitions all weigh :data:`FORBIDDEN`) gets its chunk scheme back; a
scheme given to the estimator (not "auto") is used as given.  A file whose name ends
in ``.npz`` is fstchunk's own model file (:meth:`AttributeCRF.save`), written and
read as before.
"""

from __future__ import annotations

import os
import tempfile
import warnings
import weakref

import numpy as np

from ..core.errors import FstchunkWarning, InputError, ModelFileError, SchemeError
from ..io.crfsuite.model import CRFsuiteModel, parse_model, read_model
from ..io.crfsuite.writer import encode_model, write_model
from ..models.attribute_crf import DETECT, AttributeCRF
from ..models.crfsuite_import import IMPOSSIBLE, from_crfsuite
from ..schemes.tagspace import UNCONSTRAINED, TagSpace, canonical

#: the weight a written file gives each transition the scheme forbids
FORBIDDEN = IMPOSSIBLE
#: what the anchor moves from a tag that may not open or close a sentence to its
#: transitions: large against any score, small enough that CRFsuite's forward-backward,
#: which exponentiates state and transition weights apart, neither overflows (e^300)
#: nor loses a valid path (e^-600 for a tag that may neither open nor close)
SHIFT = 300.0
#: ``model.settings_`` key of the anchor attribute (recorded by :func:`record_anchor`)
ANCHOR = "crfsuite_anchor"


def forbidden(model: AttributeCRF) -> np.ndarray:
    """(L, L) bool: the transitions ``model``'s scheme forbids (none without one)."""
    return ~np.asarray(model.space_.trans_ok, bool)


def ends(model: AttributeCRF) -> tuple[np.ndarray, np.ndarray]:
    """(L,) bool each: the tags that may not open, and that may not close, a sentence."""
    return ~np.asarray(model.space_.start_ok, bool), ~np.asarray(model.space_.end_ok, bool)


def anchor(model: AttributeCRF, X_matrix) -> str | None:
    """The first attribute (fstchunk's order) that every token of the tokens x
    attributes matrix ``X_matrix`` has with value 1; None when none has."""
    n = X_matrix.shape[0]
    csc = X_matrix.tocsc()
    ones = np.asarray((csc == 1).sum(axis=0)).ravel()
    full = np.flatnonzero((ones == n) & (np.diff(csc.indptr) == n))
    return model.fmap_.names[int(full[0])] if n and full.size else None


def record_anchor(model: AttributeCRF, X) -> None:
    """Note in ``model.settings_`` the anchor of the training sequences ``X`` (only a
    scheme with tags that may not open or close a sentence needs one)."""
    model.settings_.pop(ANCHOR, None)
    if any(m.any() for m in ends(model)):
        name = anchor(model, model.fmap_.transform(X))
        if name is not None:
            model.settings_[ANCHOR] = name


def to_crfsuite(model: AttributeCRF, anchored: bool = True, warn: bool = True
                ) -> CRFsuiteModel:
    """``model`` as a CRFsuite model (module doc): non-zero weights, forbidden
    transitions at :data:`FORBIDDEN`, with ``anchored`` the first and last tags kept
    valid through the anchor (with ``warn``, a warning when the model has none)."""
    w = model.theta_[:model.P].copy()
    pairs = model.pairs_
    trans = model.unpack(model.theta_)[0]
    bad = forbidden(model)
    has = (model.transitions_ & (trans != 0) & ~bad) | bad
    T = np.where(bad, FORBIDDEN, np.where(has, trans, 0.0))
    no_open, no_close = ends(model)
    if anchored and (no_open.any() or no_close.any()):
        name = model.settings_.get(ANCHOR)
        a = model.fmap_.index.get(name) if isinstance(name, str) else None
        if a is None:
            if warn:
                tags = ", ".join(np.asarray(model.tags_)[no_open | no_close][:3])
                warnings.warn(f"this CRFsuite model file cannot keep CRFsuite's tagger from "
                              f"opening or closing a sentence with a tag {model.scheme_} "
                              f"forbids there ({tags}, ...): no attribute had value 1 on "
                              f"every training token "
                              f"(add one, as the tutorial's 'bias': 1.0); fstchunk's own "
                              f"predictions are not affected", FstchunkWarning, stacklevel=3)
        else:
            k = no_open.astype(float) + no_close.astype(float)
            have = {int(lab): i for i, lab in enumerate(pairs[:, 1][pairs[:, 0] == a])}
            rows = np.flatnonzero(pairs[:, 0] == a)
            extra = []
            for lab in np.flatnonzero(k):
                if lab in have:
                    w[rows[have[lab]]] -= SHIFT * k[lab]
                else:
                    extra.append((a, lab, -SHIFT * k[lab]))
            if extra:
                pairs = np.vstack([pairs, [(e[0], e[1]) for e in extra]])
                w = np.concatenate([w, [e[2] for e in extra]])
            move = SHIFT * (no_open[None, :].astype(float) + no_close[:, None].astype(float))
            lift = ~bad & (move != 0)
            T = np.where(lift, T + move, T)
            has = has | lift
    keep = w != 0
    attr, label = pairs[keep, 0], pairs[keep, 1]
    used = np.unique(attr)                              # fstchunk's order of attributes
    names = [model.fmap_.names[a] for a in used]
    return CRFsuiteModel("", list(model.tags_), names, np.searchsorted(used, attr),
                         label.astype(np.int64), w[keep].astype(float), T, has)


def encoded(model: AttributeCRF) -> tuple[bytes, CRFsuiteModel]:
    """The file's bytes and the model read back from them (its header filled), for
    ``tagger_.info()`` and ``dump()``: no warning (writing the file warns)."""
    data = encode_model(to_crfsuite(model, warn=False))
    return data, parse_model(data, "the CRFsuite model")


def save(model: AttributeCRF, path: str | os.PathLike) -> None:
    """``path`` ending in ``.npz``: fstchunk's model file; any other: CRFsuite's."""
    if os.fspath(path).lower().endswith(".npz"):
        model.save(path)
    else:
        write_model(to_crfsuite(model), path)


def _written_scheme(m: CRFsuiteModel) -> str:
    """The chunk scheme of a file fstchunk wrote (every transition a scheme of
    :data:`DETECT` forbids present at :data:`FORBIDDEN`); else the unconstrained chain."""
    for scheme in DETECT:
        try:
            space = TagSpace.of(tuple(m.labels), scheme)
        except (InputError, SchemeError):
            continue
        bad = ~np.asarray(space.trans_ok, bool)
        if bad.any() and m.has_transition[bad].all() and (m.transitions[bad] == FORBIDDEN).all():
            return scheme
    return UNCONSTRAINED


def load(path: str | os.PathLike, scheme: str | None = "auto") -> AttributeCRF:
    """The model in the file ``path``: fstchunk's npz or a CRFsuite model file (module
    doc); ``scheme`` "auto" reads a CRFsuite file's scheme as the module doc says."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            magic = fh.read(4)
    except OSError as e:
        raise ModelFileError(f"{name}: cannot read the model file ({e.strerror})") from None
    if magic != b"lCRF":
        return AttributeCRF.load(name)
    if scheme == "auto":
        scheme = _written_scheme(read_model(name))
    model = from_crfsuite(name, canonical(scheme))
    if model.space_.chunked:                       # the forbidden entries are no weights
        model.theta_[model.P:model.P + model.L ** 2][forbidden(model).ravel()] = 0.0
        _unanchor(model)
    return model


def _unanchor(model: AttributeCRF) -> None:
    """Undo the anchor's shifts of a file fstchunk wrote (module doc): the attribute
    whose weights sit near −:data:`SHIFT` exactly on the tags that may not open or
    close a sentence."""
    no_open, no_close = ends(model)
    k = no_open.astype(float) + no_close.astype(float)
    if not k.any():
        return
    w = model.theta_[:model.P]
    low = w <= -SHIFT / 2
    for a in np.unique(model.pairs_[low, 0]):
        rows = np.flatnonzero(model.pairs_[:, 0] == a)
        labs = model.pairs_[rows, 1]
        if set(labs[low[rows]].tolist()) != set(np.flatnonzero(k).tolist()):
            continue
        w[rows] += SHIFT * k[labs] * low[rows]
        trans = model.theta_[model.P:model.P + model.L ** 2].reshape(model.L, model.L)
        move = SHIFT * (no_open[None, :].astype(float) + no_close[:, None].astype(float))
        trans -= np.where(forbidden(model), 0.0, move)
        model.settings_[ANCHOR] = model.fmap_.names[int(a)]
        return


class ModelFile:
    """sklearn-crfsuite's ``crf.modelfile``: ``name`` is ``model_filename`` when given,
    else a temporary CRFsuite file of the fitted model (``model*.crfsuite``, written
    when first asked for), removed with the estimator or at its next fit unless
    ``keep_tempfiles``; None before the model is fitted."""

    def __init__(self, name: str | None, auto: bool, keep: bool):
        self.name, self.auto, self.keep_tempfiles = name, auto, keep
        self._finalizer = (weakref.finalize(self, _remove, name)
                           if auto and name and not keep else None)

    def cleanup(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


def temporary(model: AttributeCRF, keep: bool) -> ModelFile:
    """A :class:`ModelFile` holding a temporary CRFsuite file of ``model``."""
    fd, name = tempfile.mkstemp(".crfsuite", "model")
    os.close(fd)
    try:
        write_model(to_crfsuite(model), name)
    except BaseException:
        _remove(name)
        raise
    return ModelFile(name, True, keep)


def _remove(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass
