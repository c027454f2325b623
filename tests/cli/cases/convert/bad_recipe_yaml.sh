# invalid input (1): a recipe that is not YAML (the message names the line and column)
printf 'recipe: 1\nbogus: [\n' >bad.yaml
ninfer-convert -r bad.yaml -o m.ninfer
