# usage error (2): --progress with an unknown mode
ninfer-verify --progress=sometimes data/upstream/direct.ninfer
