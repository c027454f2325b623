# ninfer convert: quick mode on a tiny checkpoint, then ninfer inspect --objects
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer convert ck -o m.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit
ninfer inspect m.ninfer --objects
