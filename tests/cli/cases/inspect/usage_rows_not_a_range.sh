# usage error (2): --rows that is not A:B
ninfer-inspect data/upstream/direct.ninfer --words bf16/matrix --rows 1:x
