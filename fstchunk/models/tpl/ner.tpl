# ner: CoNLL-2002 named entities: lower-cased words in a ±2 window, word shapes of W-1..W1, POS in a ±2 window, prefixes and suffixes of W0 up to 4 characters, word bigrams around W0, a first-token flag
# outside the sentence: __PAD__-1, __PAD__-2 before it, __PAD__1, __PAD__2 after it
%pad __PAD__{} __PAD__{}

U:b
U:w-2=%x[-2,word:lower]
U:w-1=%x[-1,word:lower]
U:w0=%x[0,word:lower]
U:w+1=%x[1,word:lower]
U:w+2=%x[2,word:lower]
U:s-1=%x[-1,word:shape]
U:s0=%x[0,word:shape]
U:s+1=%x[1,word:shape]
U:p-2=%x[-2,pos]
U:p-1=%x[-1,pos]
U:p0=%x[0,pos]
U:p+1=%x[1,pos]
U:p+2=%x[2,pos]
U:pre1=%x[0,word:pre1]
U:pre2=%x[0,word:pre2]
U:pre3=%x[0,word:pre3]
U:pre4=%x[0,word:pre4]
U:suf1=%x[0,word:suf1]
U:suf2=%x[0,word:suf2]
U:suf3=%x[0,word:suf3]
U:suf4=%x[0,word:suf4]
U:w0|w+1=%x[0,word:lower]|%x[1,word:lower]
U:w-1|w0=%x[-1,word:lower]|%x[0,word:lower]
U:first%x[-1,word:out]

B
