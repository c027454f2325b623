# a flipped byte of the JSON directory: the directory checksum (1)
# a tiny artifact converted from a tiny generated checkpoint (fixed id: reproducible bytes)
# (--no-resources: no tokenizer.json resource, so the payload starts at 8192 as the offsets below assume)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --no-resources --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
printf 'Z' | dd of=m.ninfer bs=1 seek=200 conv=notrunc status=none
ninfer-verify m.ninfer
