"""ONNX export of fstchunk.torch.CRF (issue 46 §2): Viterbi and marginals run in
onnxruntime give the drop-in's decode and marginals (tags exactly, probabilities to
1e-5 absolute: float32)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from fstchunk.core.errors import InputError  # noqa: E402
from fstchunk.torch import CRF, export_onnx  # noqa: E402

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def inputs(batch_first, B=4, n=7, L=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(B, n, L, generator=g) * 3
    lens = [n, 3, 1, n - 1][:B]
    mask = torch.tensor([[t < k for t in range(n)] for k in lens])
    if not batch_first:
        em, mask = em.transpose(0, 1).contiguous(), mask.T.contiguous()
    return em, mask


@pytest.mark.parametrize("batch_first, tags", [(True, TAGS), (False, None)])
def test_viterbi_and_marginals_in_onnxruntime(tmp_path, batch_first, tags):
    torch.manual_seed(1)
    crf = CRF(5, batch_first=batch_first, tags=tags)
    with torch.no_grad():
        crf.transitions.mul_(20)                # far from uniform: paths differ
    em, mask = inputs(batch_first)
    feed = {"emissions": em.numpy(), "mask": mask.numpy()}
    sess = ort.InferenceSession(str(export_onnx(crf, tmp_path / "v.onnx", em.shape[1 if
                                                batch_first else 0])))
    got = sess.run(None, feed)[0]
    if not batch_first:
        got = got.T
    want = crf.decode(em, mask)
    assert [list(row[:len(w)]) for row, w in zip(got, want)] == want
    assert all(not row[len(w):].any() for row, w in zip(got, want))
    # a batch of another size through the same graph (the batch axis is dynamic)
    em1, mask1 = inputs(batch_first, B=2, seed=5)
    got1 = sess.run(None, {"emissions": em1.numpy(), "mask": mask1.numpy()})[0]
    want1 = crf.decode(em1, mask1)
    got1 = got1 if batch_first else got1.T
    assert [list(row[:len(w)]) for row, w in zip(got1, want1)] == want1
    sess = ort.InferenceSession(str(export_onnx(crf, tmp_path / "m.onnx", em.shape[1 if
                                                batch_first else 0], output="marginals")))
    marg = sess.run(None, feed)[0]
    np.testing.assert_allclose(marg, crf.marginals(em, mask).detach().numpy(), atol=1e-5)


def test_export_refusals(tmp_path):
    crf = CRF(3)
    with pytest.raises(InputError, match="output='beam'"):
        export_onnx(crf, tmp_path / "x.onnx", 4, output="beam")
    with pytest.raises(InputError, match="seq_len=0"):
        export_onnx(crf, tmp_path / "x.onnx", 0)
    with pytest.raises(InputError, match="takes a fstchunk.torch.CRF"):
        export_onnx(torch.nn.Linear(2, 2), tmp_path / "x.onnx", 4)
