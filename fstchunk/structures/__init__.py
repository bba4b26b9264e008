"""The output structures as distributions: the chain :class:`~.lattice.Lattice` (its
layers, many lattices at once in :mod:`.lattices`), the segment space
(:mod:`.segments`), and their brute-force oracle (:mod:`.enumeration`)."""
