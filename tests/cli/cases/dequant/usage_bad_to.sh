# usage error (2): --to with an unknown type
ninfer-dequant data/upstream/direct.ninfer bf16/matrix --to f64
