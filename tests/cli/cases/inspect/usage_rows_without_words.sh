# usage error (2): --rows without --words
ninfer-inspect data/upstream/direct.ninfer --rows 0:1
