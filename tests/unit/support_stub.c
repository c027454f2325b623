/* Keeps the support library non-empty before any helper exists. */
int ninfer_test_support_stub(void);
int ninfer_test_support_stub(void) { return 0; }
