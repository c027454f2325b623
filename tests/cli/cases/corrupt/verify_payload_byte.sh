# a flipped payload byte of a converted artifact: words and checksum problems naming the object (1)
# a tiny artifact converted from a tiny generated checkpoint (fixed id: reproducible bytes)
# (--no-resources: no tokenizer.json resource, so the payload starts at 8192 as the offsets below assume)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --no-resources --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
printf '\001' | dd of=m.ninfer bs=1 seek=$((8192 + 100)) conv=notrunc status=none
ninfer-verify m.ninfer
