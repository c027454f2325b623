# usage error (2): --threads 0
ninfer-diff --threads 0 data/upstream/direct.ninfer data/upstream/direct.ninfer
