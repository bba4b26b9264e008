"""A CRFsuite model file as an fstchunk :class:`~.attribute_crf.AttributeCRF`
(``fstchunk import crfsuite MODEL --scheme ... -o model.npz``).

CRFsuite's model (:mod:`fstchunk.io.crfsuite.model`) scores y as
Σ_t Σ_a x_t[a]·w[a, y_t] + Σ_t trans[y_{t-1}, y_t], with no start or end weight;
so does the AttributeCRF built here: its pairs are the state features, its transition
features CRFsuite's, start and end 0.

* ``scheme="none"``: the unconstrained chain over CRFsuite's labels, in CRFsuite's
  order — the model CRFsuite decodes: the same Viterbi path, marginals and
  probabilities.
* a chunk scheme: every label must be a tag of it; the distribution is CRFsuite's
  restricted to the scheme's valid sequences, renormalised (Pr(y) ∝ exp score(y) for
  valid y, 0 for the rest).  Where CRFsuite's Viterbi path is valid it is the MAP
  path here too; where it is not, fstchunk's MAP is the best valid path.  The tags
  the scheme needs for the chunk types CRFsuite's labels use but that the model lacks
  (:func:`fstchunk.schemes.tagspace.missing_tags`, e.g. ``I-LST`` when training saw only
  one-token LST chunks) are added after CRFsuite's labels as impossible tags: every
  transition into or out of them weighs :data:`IMPOSSIBLE`, so no sequence of two or
  more tokens holding one has a probability above exp(−10⁶) (0 in floating point).
  A missing tag that forms a valid sequence alone (IOBES's ``S-X``, BILOU's ``U-X``,
  IOB2's ``B-X``) could still tag a one-token sentence, so the import refuses it,
  naming the tag.

Errors: the file's (:class:`~fstchunk.core.errors.ModelFileError`, naming file and byte
offset), a label that is not a tag of the scheme, a missing tag that stands alone,
a label with white space or an attribute with a line break (which fstchunk's files
cannot hold): one :class:`~fstchunk.core.errors.InputError` naming the file and the label.
"""

from __future__ import annotations

import os

import numpy as np

from ..core.errors import InputError, SchemeError
from ..io.crfsuite.model import read_model
from ..schemes import encodings as enc
from ..schemes.tagspace import UNCONSTRAINED, canonical, missing_tags
from .attribute_crf import AttributeCRF
from .attributes import AttributeMap

#: the weight of every transition into or out of a tag the CRFsuite model lacks
IMPOSSIBLE = -1e6


def from_crfsuite(path: str | os.PathLike, scheme: str | None = None) -> AttributeCRF:
    """The :class:`AttributeCRF` of the CRFsuite model file at ``path`` under ``scheme``
    (None or ``"none"``: the unconstrained chain; see the module doc)."""
    name = os.fspath(path)
    m = read_model(name)
    scheme = canonical(scheme)
    labels = list(m.labels)
    for y in labels:
        if not y or any(c.isspace() for c in y):
            raise InputError(f"{name}: label {y!r} is empty or holds white space, which "
                             f"fstchunk's outputs cannot carry")
    for i, a in enumerate(m.attributes):
        if "\n" in a:
            raise InputError(f"{name}: attribute {i} {a!r} holds a line break, which "
                             f"fstchunk's model files cannot carry")
    added: list[str] = []
    if scheme != UNCONSTRAINED:
        for y in labels:
            try:
                enc.tags_to_chunks([y], scheme, strict=False)
            except (SchemeError, InputError) as e:
                what = f"{name}: label {y!r} is not a tag of {scheme} ({e}); import with "
                raise InputError(what + "scheme=None for an unconstrained chain",
                                 cli=what + "--scheme none for an unconstrained chain"
                                 ) from None
        added = list(missing_tags(labels, scheme))
        alone = [t for t in added if enc.is_valid([t], scheme)]
        if alone:
            what = (f"{name}: the model has no label {alone[0]}, which {scheme} needs for its "
                    f"chunk type and which would tag a one-token sentence alone: fstchunk "
                    f"cannot make it impossible; import with another scheme or ")
            raise InputError(what + "scheme=None", cli=what + "--scheme none")
    L, C = len(labels) + len(added), len(labels)
    flags = np.zeros((L, L), dtype=bool)
    flags[:C, :C] = m.has_transition
    trans = np.zeros((L, L))
    trans[:C, :C] = m.transitions
    flags[C:, :] = flags[:, C:] = True
    trans[C:, :] = trans[:, C:] = IMPOSSIBLE
    pairs = np.stack([m.state_attr, m.state_label], axis=1)
    theta = np.concatenate([m.state_weight, trans.ravel(), np.zeros(2 * L)])
    settings = {"imported_from": name, "impossible_tags": added}
    model = AttributeCRF(scheme)._set_state(AttributeMap(list(m.attributes)),
                                            labels + added, scheme, pairs, flags, theta,
                                            settings)
    if model.tags_ != tuple(labels + added):      # a bug, not the user's
        raise AssertionError("the tag space reordered CRFsuite's labels")
    return model
