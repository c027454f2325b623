# invalid input (1, an error and no output): A cut short
head -c 5000 data/upstream/direct.ninfer >cut.ninfer
ninfer-diff cut.ninfer data/upstream/direct.ninfer
