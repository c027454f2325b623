# usage: --summary is a view of its own
ninfer-inspect data/upstream/direct.ninfer --summary --objects
