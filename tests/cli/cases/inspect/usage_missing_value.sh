# usage error (2): an option without its value
ninfer-inspect data/upstream/direct.ninfer --tensor
