/* ted info: what a model is made of. */
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted info -m DIR [--check]\n"
    "\n"
    "Prints the model's config, the languages it translates from and into (the\n"
    "codes --source-lang and --target-lang take), every tensor of its weights\n"
    "file with its dtype and shape, the parameter count and size, the weight\n"
    "type (fp32, int8, int4 or bf16) and the kernels that run. An int4 matrix\n"
    "(U8, two values a byte) and its F32 group scales are marked so, and so is an\n"
    "int8 matrix stored in the products' groups (U8 of 3 dimensions). The layout\n"
    "line says whether the file is mapped (ted quantize --layout mapped: loading\n"
    "copies nothing) or portable.\n"
    "\n"
    "  --check   first read every weight and fail, naming the tensor and element,\n"
    "            at a NaN or infinity (loading checks only biases and LayerNorms)\n";

/* What an int4 tensor holds, after its shape: the U8 values of a matrix
 * or the F32 group scales of one (NAME.scale next to a U8 NAME); "" for
 * the others, whose dtype says it. */
static const char *int4_part(const ted_model *model, const ted_tensor_info *t)
{
    if (!strcmp(t->dtype, "U8"))
        return t->ndim == 3 ? "  int8 in the products' groups (mapped layout)"
                            : "  int4: 2 per byte, groups of 32";
    size_t n = strlen(t->name);
    if (strcmp(t->dtype, "F32") || n < 6 || strcmp(t->name + n - 6, ".scale"))
        return "";
    for (int i = 0; i < ted_model_tensor_count(model); i++) {
        ted_tensor_info m = ted_model_tensor(model, i);
        if (!strcmp(m.dtype, "U8") && m.ndim == 2 && strlen(m.name) == n - 6 &&
            !strncmp(m.name, t->name, n - 6))
            return "  int4 group scales";
    }
    return "";
}

static void print_tensors(const ted_model *model)
{
    int count = ted_model_tensor_count(model);
    long long parameters = 0, bytes = 0;
    printf("\ntensors: %d\n", count);
    for (int i = 0; i < count; i++) {
        ted_tensor_info t = ted_model_tensor(model, i);
        long long elements = 1;
        printf("  %-60s %-4s [", t.name, t.dtype);
        for (int d = 0; d < t.ndim; d++) {
            printf(d ? ", %lld" : "%lld", (long long)t.shape[d]);
            elements *= t.shape[d];
        }
        printf("]%s\n", int4_part(model, &t));
        parameters += strcmp(t.dtype, "U8") || t.ndim == 3 ? elements : 2 * elements;
        bytes += (long long)t.bytes;
    }
    printf("parameters: %lld (%.2f M)\n", parameters, parameters / 1e6);
    printf("bytes: %lld (%.2f MiB)\n", bytes, bytes / (1024.0 * 1024.0));
}

/* The directions the model translates (ted_model_translates), when they
 * are not every pair of its languages: "directions: 2 (en>fr fr>en)". */
static void print_directions(const ted_model *model)
{
    const char *const *sources, *const *targets;
    int source_count = ted_model_languages(model, TED_SIDE_SOURCE, &sources);
    int target_count = ted_model_languages(model, TED_SIDE_TARGET, &targets);
    for (int pass = 0; pass < 2; pass++) {
        int count = 0, pairs = 0;
        for (int i = 0; i < source_count; i++)
            for (int k = 0; k < target_count; k++) {
                if (strcmp(sources[i], targets[k]) == 0)
                    continue;
                pairs++;
                if (!ted_model_translates(model, sources[i], targets[k]))
                    continue;
                if (pass == 1)
                    printf("%s%s>%s", count ? " " : "", sources[i], targets[k]);
                count++;
            }
        if (pass == 0 && count == pairs)
            return;
        if (pass == 0)
            printf("directions: %d (", count);
        else
            printf(")\n");
    }
}

/* The codes of the languages of each side (ted_model_languages). */
static void print_languages(const ted_model *model)
{
    static const char *const names[] = {"source", "target"};
    static const ted_side sides[] = {TED_SIDE_SOURCE, TED_SIDE_TARGET};
    putchar('\n');
    for (int s = 0; s < 2; s++) {
        const char *const *codes;
        int count = ted_model_languages(model, sides[s], &codes);
        printf("%s languages: %d%s", names[s], count, count ? " (" : " (none named)");
        for (int i = 0; i < count; i++)
            printf(i ? " %s" : "%s", codes[i]);
        printf("%s\n", count ? ")" : "");
    }
    print_directions(model);
}

/* "int4 (...)" when Linear weights are stored int4 (U8 of 2 dimensions, the
 * other matrices int8), "int8" when the matrices are stored I8 (with their
 * F32 scales) or in the int8 products' groups (U8 of 3 dimensions),
 * "bf16" when they are BF16 (multiplied as stored), else "fp32" (F16
 * weights run as F32). */
static const char *weight_type(const ted_model *model)
{
    for (int i = 0; i < ted_model_tensor_count(model); i++) {
        ted_tensor_info t = ted_model_tensor(model, i);
        if (!strcmp(t.dtype, "U8") && t.ndim == 2)
            return "int4 (Linear weights; embeddings and the output layer int8)";
    }
    for (int i = 0; i < ted_model_tensor_count(model); i++) {
        const char *dtype = ted_model_tensor(model, i).dtype;
        if (!strcmp(dtype, "I8") || !strcmp(dtype, "U8"))
            return "int8";
        if (!strcmp(dtype, "BF16"))
            return "bf16";
    }
    return "fp32";
}

/* "mapped" when int8 matrices are stored in the products' groups (U8 of 3
 * dimensions: ted quantize --layout mapped), else "portable". */
static const char *weight_layout(const ted_model *model)
{
    for (int i = 0; i < ted_model_tensor_count(model); i++) {
        ted_tensor_info t = ted_model_tensor(model, i);
        if (!strcmp(t.dtype, "U8") && t.ndim == 3)
            return "mapped (the kernels read the file's pages in place; nothing is copied)";
    }
    return "portable (rows; the Linear weights are copied into the kernels' layout at load)";
}

static bool info_option(cli_args *a, const char *option, void *options)
{
    (void)a;
    bool *check = options;
    if (strcmp(option, "--check"))
        return false;
    *check = true;
    return true;
}

static int info_command(ted_model *model, const cli_args *a, void *options)
{
    const bool *check = options;
    ted_error err = {0};
    if (*check && ted_model_check_weights(model, &err) != TED_OK)
        return cli_error("%s/%s", a->model_dir, err.message);
    if (ted_config_write_yaml(stdout, ted_model_config(model), &err) != TED_OK)
        return cli_error("%s", err.message);
    print_languages(model);
    print_tensors(model);
    printf("weights: %s\n", weight_type(model));
    printf("layout: %s\n", weight_layout(model));
    const ted_config_view config = ted_config_get_view(ted_model_config(model));
    if (ted_model_marian_type(model))  /* a directory as Marian saves a model */
        printf("marian: %s (%s), vocabularies %s and %s, read as shipped\n", config.files.weights,
               ted_model_marian_type(model), config.files.src_spm, config.files.tgt_spm);
    printf("kernels: %s\n", ted_cpu_kernels());
    if (*check)
        printf("check: every weight is finite\n");
    return 0;
}

int cli_info(int argc, char **argv)
{
    static const cli_command command = {"info", usage, info_option, NULL, info_command, false};
    bool check = false;
    return cli_run(&command, &check, argc, argv);
}
