# usage error (2): an unknown option
ninfer-inspect --no-such-flag data/upstream/direct.ninfer
