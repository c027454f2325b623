# usage error (2): --rows beyond the tensor's rows
ninfer-inspect data/upstream/direct.ninfer --words bf16/matrix --rows 0:9
