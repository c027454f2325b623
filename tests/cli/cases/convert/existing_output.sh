# system error (3): an existing output without --force (and it is left alone)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
echo keep >m.ninfer
ninfer-convert ck -o m.ninfer --format q8_g32_fp16
st=$?
cat m.ninfer
exit $st
