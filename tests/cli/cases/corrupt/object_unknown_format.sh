# object 'bf16/matrix' with format 'bf17': dequant names file and object, verify the object (1)
cp data/upstream/direct.ninfer f.ninfer || exit 99
off=$(grep -obUa '"format":"bf16"' f.ninfer | head -1 | cut -d: -f1)
printf '7' | dd of=f.ninfer bs=1 seek=$((off + 13)) conv=notrunc status=none
ninfer-verify f.ninfer; echo "verify: $?"
ninfer-dequant f.ninfer bf16/matrix --format text
