"""What fstchunk reads and writes besides models: CoNLL files (:mod:`.conll`), their
columns and layout (:mod:`.columns`, :mod:`.layout`), gold checking (:mod:`.gold`),
partial annotation (:mod:`.annotation`, :mod:`.not_chunk`), segment files
(:mod:`.segments`), CRFsuite's formats (:mod:`.crfsuite`) and the public corpora
fetched into a cache (:mod:`.datasets`)."""
