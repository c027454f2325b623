/* Example: open an artifact, find a tensor, decode its words in bounded row chunks and print
 * the represented values of its first row.   cc dump_tensor.c $(pkg-config --cflags --libs ninfer)
 * usage: dump_tensor FILE.ninfer TENSOR_ID */
#include <stdio.h>
#include <stdlib.h>

#include <ninfer/ninfer.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE.ninfer TENSOR_ID\n", argv[0]);
        return 2;
    }
    nf_error err;
    nf_artifact *a = NULL;
    if (nf_artifact_open(argv[1], NF_READ_PREAD, &a, &err) != NF_OK) {
        fprintf(stderr, "%s\n", err.message);
        return nf_status_exit_code(err.status);
    }
    const nf_object *o = nf_artifact_find(a, argv[2]);
    nf_geometry g;
    if (!o || o->kind != NF_OBJECT_TENSOR || nf_artifact_check_object(a, o, &g, &err) != NF_OK) {
        fprintf(stderr, "%s: no usable tensor '%s'\n", argv[1], argv[2]);
        nf_artifact_close(a);
        return 1;
    }
    /* nvfp4 scale planes are tiled by 128 rows; decode_rows reads what a window needs. */
    nf_byte_reader reader;
    nf_artifact_object_reader(a, o, &reader);
    nf_words w;
    float *values = malloc((size_t)g.cols * sizeof *values);
    int rc = 0;
    if (!values || nf_words_alloc(&w, &g, 1, &err) != NF_OK) {
        fprintf(stderr, "out of memory\n");
        free(values);
        nf_artifact_close(a);
        return 3;
    }
    if (nf_layout_decode_rows(&g, &reader, 0, 1, &w, &err) != NF_OK ||
        nf_words_to_f32(&g, &w, 0, values, &err) != NF_OK) {
        fprintf(stderr, "%s\n", err.message);
        rc = nf_status_exit_code(err.status);
    } else {
        printf("%s %s row 0:", o->id, g.format->name);
        for (uint64_t c = 0; c < g.cols && c < 8; c++) printf(" %g", (double)values[c]);
        printf("%s\n", g.cols > 8 ? " ..." : "");
    }
    nf_words_free(&w);
    free(values);
    nf_artifact_close(a);
    return rc;
}
