# a flipped payload byte of a converted artifact: words and checksum problems naming the object (1)
# a tiny artifact converted from a tiny generated checkpoint (fixed id: reproducible bytes)
# (--no-resources: no tokenizer.json resource; the payload starts at align_up(32 + json_bytes, 4096))
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --no-resources --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
jb=$(od -An -tu8 -j8 -N8 m.ninfer | tr -d ' ')
printf '\001' | dd of=m.ninfer bs=1 seek=$(((32 + jb + 4095) / 4096 * 4096 + 100)) conv=notrunc status=none
ninfer-verify m.ninfer
