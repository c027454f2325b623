# usage error (2): --all without -o
ninfer-dequant data/upstream/direct.ninfer --all
