# usage error (2): an output that is an input
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o ck/model.safetensors --format q8_g32_fp16 --force
