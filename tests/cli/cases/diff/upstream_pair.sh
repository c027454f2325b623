# different (1): two upstream artifacts with other objects and directories
ninfer-diff data/upstream/direct.ninfer data/upstream/row_split.ninfer
