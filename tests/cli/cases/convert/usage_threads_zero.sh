# usage error (2): --threads 0
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --threads 0
