# same (0): an artifact and a copy of it
cp data/upstream/direct.ninfer copy.ninfer
ninfer-diff data/upstream/direct.ninfer copy.ninfer
