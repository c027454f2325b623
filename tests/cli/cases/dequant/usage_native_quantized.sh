# usage error (2): --to native on a quantized tensor
ninfer-dequant data/upstream/row_split.ninfer q8 --to native
