# usage error (2): --threads that is not a number
ninfer-dequant data/upstream/direct.ninfer bf16/matrix --threads abc
