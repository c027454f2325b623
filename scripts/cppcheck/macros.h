/* What cppcheck must know that it cannot read (make lint; tests/README.md, "Habits"): it is given
 * no system header, so the facts the tree's #if tests take from them are stated here.  Not a
 * header of the build. */

/* <float.h> on the targets we build for (x86-64 SSE, aarch64): binary32 and binary64 evaluated
 * without excess precision; the tree refuses to build otherwise (#error). */
#define FLT_EVAL_METHOD 0

/* <jansson.h>'s iteration macros (Debian's libjansson-dev 2.14), as loops cppcheck can follow. */
#define json_object_foreach(object, key, value)                                                      \
    for (key = json_object_iter_key(json_object_iter(object));                                       \
         key && (value = json_object_iter_value(json_object_key_to_iter(key)));                      \
         key = json_object_iter_key(json_object_iter_next(object, json_object_key_to_iter(key))))
#define json_object_foreach_safe(object, n, key, value)                                              \
    for (key = json_object_iter_key(json_object_iter(object)),                                       \
        n = json_object_iter_next(object, json_object_key_to_iter(key));                             \
         key && (value = json_object_iter_value(json_object_key_to_iter(key)));                      \
         key = json_object_iter_key(n), n = json_object_iter_next(object, json_object_key_to_iter(key)))
#define json_array_foreach(array, index, value)                                                      \
    for (index = 0; index < json_array_size(array) && (value = json_array_get(array, index)); index++)
