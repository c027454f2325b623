# usage error (2): an output that is a directory
ninfer-dequant data/upstream/direct.ninfer bf16/matrix -o .
