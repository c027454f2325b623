# success: long dtype and format names (IQ2_XXS, gguf_iq2_xxs) widen their columns in the
# --dry-run table and in inspect's objects and totals tables, every line aligned
cat >r.yaml <<'EOF'
recipe: 1
sources:
  base: data/gguf/all_types.gguf
output:
  name: iq
defaults: {format: fp32}
rules:
  - match: "q.q*"
    skip: true
  - match: "q.iq1*"
    skip: true
  - match: "q.iq4*"
    skip: true
  - match: "q.iq2_s"
    skip: true
  - match: "q.iq2_xs"
    skip: true
  - match: "q.iq3_s"
    skip: true
  - match: "q.iq2_xxs"
    format: gguf_iq2_xxs
    method: import_encoded
  - match: "q.iq3_xxs"
    format: gguf_iq3_xxs
    method: import_encoded
EOF
ninfer-convert -r r.yaml -o m.ninfer --dry-run || exit
ninfer-convert -r r.yaml -o m.ninfer --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
ninfer-inspect m.ninfer --objects
