# success: two rows of a q8 tensor of a freshly converted artifact, as text
# a tiny artifact converted from a tiny generated checkpoint (fixed id: reproducible bytes)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
ninfer-dequant m.ninfer model.layers.0.self_attn.k_proj.weight --format text --rows 0:2 --to bf16
