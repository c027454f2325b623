# different (1): one tiny checkpoint as q8 and as q4 with the same artifact id: every tensor
# quantized in both changed, with its statistics, then the directory keys that differ
ninfer-gen-checkpoint ck --layers 1 --hidden 64 --intermediate 128 --vocab 64 >/dev/null
ninfer-convert ck -o q8.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report 2>/dev/null
ninfer-convert ck -o q4.ninfer --format q4_g64_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report 2>/dev/null
ninfer-diff q8.ninfer q4.ninfer
