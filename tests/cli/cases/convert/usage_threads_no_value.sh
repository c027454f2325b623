# usage error (2): --threads without its value
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --threads
