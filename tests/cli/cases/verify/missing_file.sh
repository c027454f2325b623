# system error (3): FILE does not exist (the others are still checked)
ninfer-verify missing.ninfer data/upstream/direct.ninfer
