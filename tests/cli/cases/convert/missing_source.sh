# system error (3): the checkpoint does not exist
ninfer-convert missing_ck -o m.ninfer --format q8_g32_fp16
