# usage error (2): --threads 0
ninfer-dequant data/upstream/direct.ninfer bf16/matrix --threads 0
