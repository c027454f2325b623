# usage error (2): an unknown option
ninfer-verify --no-such-flag data/upstream/direct.ninfer
