# system error (3): the recipe does not exist
ninfer-convert -r missing.yaml -o m.ninfer
