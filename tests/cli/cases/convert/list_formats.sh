# success (0): --list-formats prints every registered format, one a line (the 30 of docs/formats.md),
# through the dispatcher too; nothing is converted
ninfer convert --list-formats
