# different (1): a q8 artifact against the checkpoint it was converted from (the source the
# reference: the conversion report's figures)
ninfer-gen-checkpoint ck --layers 1 --hidden 64 --intermediate 128 --vocab 64 >/dev/null
ninfer-convert ck -o q8.ninfer --format q8_g32_fp16 --no-report 2>/dev/null
ninfer-diff q8.ninfer ck
