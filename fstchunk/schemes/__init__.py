"""Chunk encodings: :mod:`.encodings` (the schemes as pure functions: validity,
tags ↔ chunks, conversion), :mod:`.tagspace` (a scheme compiled over a tag list: the one
tag space) and :mod:`.tagseq` (a sentence's tags)."""
