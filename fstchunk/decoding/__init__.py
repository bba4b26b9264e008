"""Expectations and decisions over structures: the decoder registry
(:mod:`.decoders`), MAP/MEU/posterior decoding (:mod:`.decode`), expected F
(:mod:`.expected`), loss-augmented decoding (:mod:`.lossaug`), entity confidences
(:mod:`.confidence`, :mod:`.display`), batches of sentences (:mod:`.batch`), active
learning's selection (:mod:`.selection`) and segment MEU (:mod:`.segments`)."""
