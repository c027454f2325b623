# success: --summary --json, on an artifact with parts and a resource (file_bytes counts every
# file: the entry's header, directory and gap, each part's 4096-byte header and gap, the payload)
cd data/upstream || exit 99
ninfer-inspect split.ninfer --summary --json
