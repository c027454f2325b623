# different (1), --json: one tiny checkpoint as q8 and as bf16
ninfer-gen-checkpoint ck --layers 1 --hidden 64 --intermediate 128 --vocab 64 >/dev/null
ninfer-convert ck -o q8.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report 2>/dev/null
ninfer-convert ck -o bf.ninfer --format bf16 --artifact-id 0123456789abcdef0123456789abcdef --no-report 2>/dev/null
ninfer-diff --json q8.ninfer bf.ninfer
