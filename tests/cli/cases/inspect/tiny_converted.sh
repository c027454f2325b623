# success: the summary of a freshly converted tiny artifact
# a tiny artifact converted from a tiny generated checkpoint (fixed id: reproducible bytes)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
ninfer-inspect m.ninfer
