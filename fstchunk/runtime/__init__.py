"""Spreading work: :mod:`.parallel` (forked workers, resident pools) and :mod:`.scale`
(local processes or a Dask cluster behind one executor interface). They know no model."""
