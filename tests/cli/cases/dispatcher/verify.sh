# ninfer verify runs ninfer-verify (the same output and status)
ninfer verify data/upstream/direct.ninfer
