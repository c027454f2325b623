# usage error (2): --threads that is not a number
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --threads abc
