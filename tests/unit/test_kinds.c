/* The layer kinds a model chooses when it loads (model.h's ted_layer_kinds)
 * against the words of its config.yaml: copies of tests/data/tiny-model
 * whose config names each activation and each sinusoidal positional
 * encoding load as the kind of that name; norm_first and layer_norm_eps
 * make the norm; the decoder layer is masked self-attention. */
#include <criterion/criterion.h>

#include "model/decoder.h"
#include "model/model.h"
#include "model_dir.h"

/* tiny-model with `old` of its config replaced by `new`, loaded; the
 * directory is removed once the model is loaded. */
static ted_model *load_edited(const char *old, const char *new)
{
    temp_dir dir = make_model_dir(old, new, true);
    ted_model *model = load(dir.path);
    remove_model_dir(&dir);
    return model;
}

Test(kinds, each_activation_chooses_its_feed_forward_network)
{
    static const char *const words[] = {"relu", "gelu", "silu"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        char line[64];
        snprintf(line, sizeof line, "activation: %s", words[i]);
        ted_model *model = load_edited("activation: relu", line);
        cr_assert_str_eq(model->kinds.feed_forward->name, words[i], "config says %s",
                         words[i]);
        ted_model_free(model);
    }
}

Test(kinds, each_sinusoidal_encoding_chooses_its_positions)
{
    static const char *const words[] = {"interleaved", "concatenated", "fairseq"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        char line[64];
        snprintf(line, sizeof line, "positional_encoding: %s", words[i]);
        ted_model *model = load_edited("positional_encoding: interleaved", line);
        const ted_position_kind *kind = model->kinds.positions;
        cr_assert_str_eq(kind->name, words[i], "config says %s", words[i]);
        cr_assert_not_null(kind->fill, "%s: a sinusoidal table is computed", words[i]);
        ted_model_free(model);
    }
}

Test(kinds, the_norm_is_layer_norm_with_the_configs_place_and_eps)
{
    ted_model *post = load(TINY_DIR);
    cr_assert_eq(post->kinds.norm.kind, &ted_layer_norm_kind);
    cr_assert_not(post->kinds.norm.first, "norm_first: false is post-norm");
    cr_assert_eq(post->kinds.norm.eps, 1e-5f);
    ted_model_free(post);

    ted_model *pre = load_edited("norm_first: false\n  layer_norm_eps: 1.0e-05",
                                 "norm_first: true\n  layer_norm_eps: 1.0e-06");
    cr_assert_eq(pre->kinds.norm.kind, &ted_layer_norm_kind);
    cr_assert(pre->kinds.norm.first, "norm_first: true is pre-norm");
    cr_assert_eq(pre->kinds.norm.eps, 1e-6f);
    ted_model_free(pre);
}

Test(kinds, the_decoder_layer_is_masked_self_attention)
{
    ted_model *model = load(TINY_DIR);
    cr_assert_eq(model->kinds.decoder_layer, &ted_self_attention_decoder_layer);
    cr_assert_str_eq(model->kinds.decoder_layer->name, "self-attention");
    ted_model_free(model);
}

Test(kinds, the_feed_forward_form_and_the_norm_kind_follow_the_config)
{
    ted_model *plain = load(TINY_DIR);
    cr_assert_eq(plain->kinds.feed_forward, &ted_relu_feed_forward);
    cr_assert_eq(plain->kinds.feed_forward->hidden_rows, 1);
    ted_model_free(plain);

    ted_model *tanh = load_edited("activation: relu", "activation: gelu_tanh");
    cr_assert_eq(tanh->kinds.feed_forward, &ted_gelu_tanh_feed_forward);
    ted_model_free(tanh);
}
