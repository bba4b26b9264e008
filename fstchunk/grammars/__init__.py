"""Grammar sources of fstchunk: one module per machine family.

* :mod:`.local` — strictly 2-local machines built state by state from a scheme's
  prefix rules (the validity acceptors, encoders and conversions below are such);
* :mod:`.validity` — validity acceptors of every scheme;
* :mod:`.conversion` — the IOBES encoders and the conversion transducers;
* :mod:`.counting` — the true-positive counter T, the chunk counter M and T⊠M;
* :mod:`.models` — probability models as weighted machines (CRF lattice, HMM, toy);
* :mod:`.registry` — every machine by name, and the one FAR exporter
  (:func:`.registry.export_far`, behind ``fstchunk grammar export``);
* :mod:`.drawing` — machines as AT&T text and Graphviz drawings (``grammar
  print|draw``);
* :mod:`.budget` — the size of each machine estimated before it is built, and the
  state budget that refuses (``BudgetError``) what would not fit in memory.

Each family module is pure builders: a tag set (scheme, chunk types) in, a pynini
machine out, with the shared symbol table of :mod:`fstchunk.schemes.tagspace` attached.

Pitfall: the family modules must not import :mod:`.registry` (it imports them),
nor anything above the machines (lattice, expected, models): the package layers
are encodings -> tagspace/fsa -> grammars -> lattices and models.  Inside the package:
local -> budget -> (validity, conversion, counting, models, loss) -> registry.
"""
