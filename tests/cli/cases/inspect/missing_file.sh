# system error (3): FILE does not exist
ninfer-inspect missing.ninfer
