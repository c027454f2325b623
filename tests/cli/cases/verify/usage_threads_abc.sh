# usage error (2): --threads that is not a number
ninfer-verify --threads abc data/upstream/direct.ninfer
