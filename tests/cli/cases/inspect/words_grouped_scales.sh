# success: a binary16 scale word is shown with the shortest decimal that rounds back to the same
# word (0x15f4 is 0.001453, not its exact 0.001453399658203125 nor 0.0014533997, its shortest as a binary32)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
ninfer-inspect m.ninfer --words model.layers.0.mlp.down_proj.weight --rows 0:2 --cols 30:34
