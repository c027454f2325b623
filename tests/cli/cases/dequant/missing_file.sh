# system error (3): FILE does not exist
ninfer-dequant missing.ninfer bf16/matrix
