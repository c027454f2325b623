# usage error (2): an unknown option
ninfer-convert --no-such-flag -o m.ninfer
