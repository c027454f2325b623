# system error (3): B does not exist
ninfer-diff data/upstream/direct.ninfer missing.ninfer
