# an artifact cut short: verify, inspect, dequant (1 each)
# a tiny artifact converted from a tiny generated checkpoint (fixed id: reproducible bytes)
# (--no-resources: no tokenizer.json resource)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --no-resources --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
head -c 20000 m.ninfer >cut.ninfer
ninfer-verify cut.ninfer; echo "verify: $?"
ninfer-inspect cut.ninfer; echo "inspect: $?"
ninfer-dequant cut.ninfer lm_head.weight -o x.f32
