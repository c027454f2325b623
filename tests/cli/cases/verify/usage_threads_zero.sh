# usage error (2): --threads 0
ninfer-verify --threads 0 data/upstream/direct.ninfer
