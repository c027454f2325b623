# ninfer convert: a usage error of ninfer-convert (2)
ninfer convert --no-such-flag -o m.ninfer
