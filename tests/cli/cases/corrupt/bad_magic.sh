# a bad magic byte: verify, inspect (read as a checkpoint) and dequant (1 each)
cp data/upstream/direct.ninfer magic.ninfer || exit 99
printf 'X' | dd of=magic.ninfer bs=1 conv=notrunc status=none
ninfer-verify magic.ninfer; echo "verify: $?"
ninfer-inspect magic.ninfer; echo "inspect: $?"
ninfer-dequant magic.ninfer bf16/matrix
