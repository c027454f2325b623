# object 'bf16/matrix' records 13 bytes (its encoding has 12): dequant names file and object, verify the object (1)
cp data/upstream/direct.ninfer b.ninfer || exit 99
off=$(grep -obUa '"bytes":12,' b.ninfer | cut -d: -f1)
printf '3' | dd of=b.ninfer bs=1 seek=$((off + 9)) conv=notrunc status=none
ninfer-verify b.ninfer; echo "verify: $?"
ninfer-dequant b.ninfer bf16/matrix --format text
