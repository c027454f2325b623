# usage error (2): --format with an unknown format
ninfer-dequant data/upstream/direct.ninfer bf16/matrix --format xml
