# usage error (2): --rows beyond the tensor's rows
ninfer-dequant data/upstream/direct.ninfer bf16/matrix --rows 0:99
