"""The numerical engine: one chain engine (:mod:`.chain`), counting recursions over
chunk counts (:mod:`.counting`), the expectation semiring (:mod:`.expectation`) and
interval DPs over spans (:mod:`.intervals`).  Pure numpy over arrays; it knows
nothing of files, models or machines, and imports only :mod:`fstchunk.tagspace`."""
