"""The ground floor: what every room uses and that knows nothing of chunks.

:mod:`.errors` (the one error family), :mod:`.outputs` (every file written),
:mod:`.sources` (every file read), :mod:`.progress`, :mod:`.blas` (one BLAS thread inside
public calls), :mod:`.fbeta` (β of F_β), :mod:`.namespace`, :mod:`.stringpack`,
:mod:`.scorecheck`.
"""
