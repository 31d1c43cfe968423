/* Translating through the C API: load a model, translate, free.
 *
 *   cc translate.c $(pkg-config --cflags --libs ted) -o translate
 *   ./translate models/toy-en-fr "the black cat eats the small bird ."
 */
#include <stdio.h>
#include <stdlib.h>

#include "ted/ted.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [SENTENCE]\n", argv[0]);
        return 1;
    }
    const char *sentence = argc > 2 ? argv[2] : "the small cat sleeps .";

    ted_model *model = NULL;
    ted_error err = {0};
    if (ted_model_load(argv[1], &model, &err) != TED_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    ted_translate_options options = ted_translate_default_options();
    char *translation = NULL;
    ted_status status = ted_translate(model, &sentence, 1, &options, &translation, NULL, &err);
    if (status == TED_OK)
        printf("%s\n", translation);
    else
        fprintf(stderr, "%s\n", err.message);
    free(translation);
    ted_model_free(model);
    return status == TED_OK ? 0 : 1;
}
