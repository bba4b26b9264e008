# tmpt4: Tang et al. Table 6: tmpt3 plus the word trigrams
# outside the sentence: __BOS-1__, __BOS-2__ before it, __EOS+1__, __EOS+2__ after it
%pad __BOS{}__ __EOS+{}__

U:b
U:W-2=%x[-2,word]
U:W-1=%x[-1,word]
U:W0=%x[0,word]
U:W+1=%x[1,word]
U:W+2=%x[2,word]
U:P-2=%x[-2,pos]
U:P-1=%x[-1,pos]
U:P0=%x[0,pos]
U:P+1=%x[1,pos]
U:P+2=%x[2,pos]
U:W-2W-1=%x[-2,word]|%x[-1,word]
U:W-1W0=%x[-1,word]|%x[0,word]
U:W0W+1=%x[0,word]|%x[1,word]
U:W+1W+2=%x[1,word]|%x[2,word]
U:P-2P-1=%x[-2,pos]|%x[-1,pos]
U:P-1P0=%x[-1,pos]|%x[0,pos]
U:P0P+1=%x[0,pos]|%x[1,pos]
U:P+1P+2=%x[1,pos]|%x[2,pos]
U:P-2P-1P0=%x[-2,pos]|%x[-1,pos]|%x[0,pos]
U:P-1P0P+1=%x[-1,pos]|%x[0,pos]|%x[1,pos]
U:P0P+1P+2=%x[0,pos]|%x[1,pos]|%x[2,pos]
U:W-2W-1W0=%x[-2,word]|%x[-1,word]|%x[0,word]
U:W-1W0W+1=%x[-1,word]|%x[0,word]|%x[1,word]
U:W0W+1W+2=%x[0,word]|%x[1,word]|%x[2,word]
U:P-1W-1=%x[-1,pos]|%x[-1,word]
U:P0W0=%x[0,pos]|%x[0,word]
U:P-1P0W-1=%x[-1,pos]|%x[0,pos]|%x[-1,word]
U:P-1P0W0=%x[-1,pos]|%x[0,pos]|%x[0,word]
U:P-1W-1W0=%x[-1,pos]|%x[-1,word]|%x[0,word]
U:P0W-1W0=%x[0,pos]|%x[-1,word]|%x[0,word]
U:P-1P0P+1W0=%x[-1,pos]|%x[0,pos]|%x[1,pos]|%x[0,word]

B
