# an empty file is an invalid input (1), not a system error
touch empty.ninfer
ninfer-verify empty.ninfer; echo "verify: $?"
ninfer-inspect empty.ninfer
