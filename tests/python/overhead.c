/* The C side of the Python package's overhead check (test_package.py):
 * ted_translate of one sentence, `calls` times a round; prints the fastest
 * round's seconds per call (the round least disturbed by other work).
 *   overhead MODEL_DIR TEXT CALLS ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ted/ted.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: overhead MODEL_DIR TEXT CALLS ROUNDS\n");
        return 2;
    }
    ted_model *model;
    ted_error err;
    if (ted_model_load(argv[1], &model, &err) != TED_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const char *text = argv[2];
    int calls = atoi(argv[3]), rounds = atoi(argv[4]);
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double start = now();
        for (int i = 0; i < calls; i++) {
            char *out = NULL;
            if (ted_translate(model, &text, 1, NULL, &out, NULL, &err) != TED_OK) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
            }
            ted_free(out);
        }
        double t = (now() - start) / calls;
        best = t < best ? t : best;
    }
    printf("%.9f\n", best);
    ted_model_free(model);
    return 0;
}
