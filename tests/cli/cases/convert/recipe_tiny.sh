# success: a recipe of its own, the artifact verified
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
cat >r.yaml <<'EOF'
recipe: 1
sources:
  base: ck
output:
  name: tiny
defaults: {format: bf16}
rules:
  - match: "*.weight"
    when: {rank: 2}
    format: q8_g32_fp16
EOF
ninfer-convert -r r.yaml -o m.ninfer --artifact-id 0123456789abcdef0123456789abcdef -q || exit
ls && ninfer-verify m.ninfer
