"""ONNX export of :class:`fstchunk.torch.CRF`'s Viterbi and marginals (issue 46 §2).

``export_onnx(crf, "crf.onnx", seq_len=64)`` writes a graph with inputs ``emissions``
(batch, seq_len, num_tags) (seq first without ``batch_first``) and ``mask`` (same
leading axes, bool, left-aligned) and output ``tags`` (int64 tag indices, 0 on
padding) or ``marginals`` (Pr(y_t = l), 0 on padding).  The batch axis is dynamic; the
sequence axis is fixed at ``seq_len`` (the recursions are unrolled): pad shorter
sentences and mark them in the mask.  The graph runs the drop-in's own recursions
(:meth:`CRF._viterbi`, :meth:`CRF._marginals`) without their input checks; needs the
``onnx`` extra (``pip install fstchunk[onnx]``: onnx and onnxscript for
``torch.onnx.export``'s exporter, onnxruntime to run the graph).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from ..core.errors import InputError
from .pytorch_crf import CRF

OUTPUTS = ("viterbi", "marginals")


class _Graph(torch.nn.Module):
    """The exported computation: the CRF's prepared inputs to one output."""

    def __init__(self, crf: CRF, output: str):
        super().__init__()
        self.crf, self.output = crf, output

    def forward(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        em, m = self.crf._prepare(emissions, mask, None)
        out = self.crf._viterbi(em, m) if self.output == "viterbi" else \
            self.crf._marginals(em, m)
        return out.transpose(0, 1) if self.crf.batch_first else out


def export_onnx(crf: CRF, path: str | Path, seq_len: int, output: str = "viterbi",
                opset: int = 18) -> Path:
    """Write ``crf``'s ``output`` (``"viterbi"`` or ``"marginals"``) as an ONNX graph
    for sequences padded to ``seq_len`` (module doc) with ``torch.onnx.export`` (the
    torch.export-based exporter); returns the path."""
    if not isinstance(crf, CRF):
        raise InputError(f"export_onnx takes a fstchunk.torch.CRF, got {type(crf).__name__}")
    if output not in OUTPUTS:
        raise InputError(f"export_onnx(output={output!r}): use one of {', '.join(OUTPUTS)}")
    if not isinstance(seq_len, int) or seq_len < 1:
        raise InputError(f"export_onnx(seq_len={seq_len!r}): a positive number of tokens")
    shape = (2, seq_len) if crf.batch_first else (seq_len, 2)
    em = torch.zeros(*shape, crf.num_tags, dtype=crf.transitions.dtype)
    mask = torch.ones(*shape, dtype=torch.bool)
    b = 0 if crf.batch_first else 1
    name = "tags" if output == "viterbi" else "marginals"
    path = Path(path)
    batch = torch.export.Dim("batch")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # the exporter's notes on axes
        warnings.simplefilter("ignore", FutureWarning)
        torch.onnx.export(_Graph(crf, output).eval(), (em, mask), str(path),
                          input_names=["emissions", "mask"], output_names=[name],
                          dynamic_shapes=({b: batch}, {b: batch}), opset_version=opset,
                          dynamo=True, verbose=False)
    return path
