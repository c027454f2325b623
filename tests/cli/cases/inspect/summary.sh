# success: --summary fits one screen: totals, bits per weight of the artifact and of its
# tensors, totals per format and the methods that made the tensors (from provenance)
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q4_g64_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
ninfer-inspect m.ninfer --summary
