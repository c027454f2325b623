# usage error (2): no -o
ninfer-convert ck --format q8_g32_fp16
