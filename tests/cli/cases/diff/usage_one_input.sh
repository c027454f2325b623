# usage error (2): one input
ninfer-diff data/upstream/direct.ninfer
