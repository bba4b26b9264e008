"""The numerical engine: one chain engine (:mod:`.chain`, with :func:`.chain.gauge`,
the lattice as a stochastic chain), its arrays built once per lattice
(:mod:`.tables`), counting recursions over chunk counts (:mod:`.counting`), chunk
marginals under count tilts (:mod:`.spans`), the expectation semiring
(:mod:`.expectation`; a batch's corpus expectations, :mod:`.corpus_expectations`), interval DPs over sparse span lists (:mod:`.intervals`) and
exact MEU with its certificate (:mod:`.meu`).  Pure numpy over arrays; it knows
nothing of files, models or machines, and imports only :mod:`fstchunk.schemes.tagspace`,
:mod:`fstchunk.schemes.encodings` and :mod:`fstchunk.core.errors`."""
