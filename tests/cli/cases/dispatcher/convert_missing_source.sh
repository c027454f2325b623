# ninfer convert: a missing checkpoint (3)
ninfer convert missing_ck -o m.ninfer --format q8_g32_fp16
