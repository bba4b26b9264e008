"""Scoring against gold: chunk P/R/F_β as conlleval.pl reads files (:mod:`.conlleval`,
:mod:`.chunks`), the SemEval-2013 modes (:mod:`.modes`), segment P/R/F (:mod:`.segments`), and how calibrated confidences are
(:mod:`.reliability`)."""
