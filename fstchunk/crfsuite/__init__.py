"""CRFsuite's files, independent of fstchunk's models: model files (:mod:`.model`:
labels, attributes, state features, transitions, read in pure Python) and the data
format (:mod:`.data`: ``LABEL<TAB>attr[:weight]...``, read and written)."""

from .data import Sequence, escape, format_sequence, iter_data, read_data, write_data
from .model import CRFsuiteModel, read_model

__all__ = ["CRFsuiteModel", "Sequence", "escape", "format_sequence", "iter_data",
           "read_data", "read_model", "write_data"]
