# tmpt2-nopos: Tang et al. Table 4: tmpt1 plus the word trigrams (POS-free: every P item is the word shape S at its offset, plus prefixes and suffixes of W0 up to 4 characters)
# outside the sentence: __BOS-1__, __BOS-2__ before it, __EOS+1__, __EOS+2__ after it
%pad __BOS{}__ __EOS+{}__

U:b
U:W-2=%x[-2,word]
U:W-1=%x[-1,word]
U:W0=%x[0,word]
U:W+1=%x[1,word]
U:W+2=%x[2,word]
U:S-2=%x[-2,word:shape]
U:S-1=%x[-1,word:shape]
U:S0=%x[0,word:shape]
U:S+1=%x[1,word:shape]
U:S+2=%x[2,word:shape]
U:W-2W-1=%x[-2,word]|%x[-1,word]
U:W-1W0=%x[-1,word]|%x[0,word]
U:W0W+1=%x[0,word]|%x[1,word]
U:W+1W+2=%x[1,word]|%x[2,word]
U:S-2S-1=%x[-2,word:shape]|%x[-1,word:shape]
U:S-1S0=%x[-1,word:shape]|%x[0,word:shape]
U:S0S+1=%x[0,word:shape]|%x[1,word:shape]
U:S+1S+2=%x[1,word:shape]|%x[2,word:shape]
U:S-2S-1S0=%x[-2,word:shape]|%x[-1,word:shape]|%x[0,word:shape]
U:S-1S0S+1=%x[-1,word:shape]|%x[0,word:shape]|%x[1,word:shape]
U:S0S+1S+2=%x[0,word:shape]|%x[1,word:shape]|%x[2,word:shape]
U:W-2W-1W0=%x[-2,word]|%x[-1,word]|%x[0,word]
U:W-1W0W+1=%x[-1,word]|%x[0,word]|%x[1,word]
U:W0W+1W+2=%x[0,word]|%x[1,word]|%x[2,word]
U:pre1=%x[0,word:pre1]
U:pre2=%x[0,word:pre2]
U:pre3=%x[0,word:pre3]
U:pre4=%x[0,word:pre4]
U:suf1=%x[0,word:suf1]
U:suf2=%x[0,word:suf2]
U:suf3=%x[0,word:suf3]
U:suf4=%x[0,word:suf4]

B
