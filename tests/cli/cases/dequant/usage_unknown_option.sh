# usage error (2): an unknown option
ninfer-dequant --no-such-flag data/upstream/direct.ninfer bf16/matrix
