/* A config as JSON (ted_config_json in ted/ted.h): every key that
 * ted_config_visit hands over, as config.yaml would write it. */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"

typedef struct json_visit {
    cJSON *root;
    bool failed;
} json_visit;

/* `count` codes packed one after another, as an array of strings. */
static cJSON *code_array(const char *codes, int count)
{
    cJSON *array = cJSON_CreateArray();
    for (int i = 0; array && i < count; codes += strlen(codes) + 1, i++) {
        cJSON *code = cJSON_CreateString(codes);
        if (!code || !cJSON_AddItemToArray(array, code)) {
            cJSON_Delete(code);
            cJSON_Delete(array);
            return NULL;
        }
    }
    return array;
}

/* The JSON value of one key: numbers, booleans, strings (words and paths)
 * lists of numbers and of strings (language codes); floats as config.yaml spells them (1.0e-05).
 * A word spelled true or false (decoding.early_stopping) is the boolean a
 * YAML reader takes it for, as transformers' generation config holds it. */
static cJSON *json_value(ted_value_type type, const void *value, int count)
{
    char text[32];
    switch (type) {
    case TED_VALUE_INT:
        return cJSON_CreateNumber(*(const int *)value);
    case TED_VALUE_BOOL:
        return cJSON_CreateBool(*(const bool *)value);
    case TED_VALUE_FLOAT:
        ted_config_format_float(*(const float *)value, text, sizeof text);
        return cJSON_CreateRaw(text);
    case TED_VALUE_WORD:
        if (value && (!strcmp(value, "true") || !strcmp(value, "false")))
            return cJSON_CreateBool(!strcmp(value, "true"));
        return value ? cJSON_CreateString(value) : cJSON_CreateNull();
    case TED_VALUE_PATH:
        return value ? cJSON_CreateString(value) : cJSON_CreateNull();
    case TED_VALUE_INT_LIST:
        return cJSON_CreateIntArray(value, count);
    case TED_VALUE_CODE:
        return cJSON_CreateString(value);
    case TED_VALUE_CODE_LIST:
        return code_array(value, count);
    }
    return cJSON_CreateNull();
}

static void add_key(void *data, const char *section, const char *key, ted_value_type type,
                    const void *value, int count)
{
    json_visit *v = data;
    cJSON *parent = v->root;
    if (section) {
        parent = cJSON_GetObjectItemCaseSensitive(v->root, section);
        if (!parent)
            parent = cJSON_AddObjectToObject(v->root, section);
    }
    cJSON *item = json_value(type, value, count);
    if (!parent || !item || !cJSON_AddItemToObject(parent, key, item)) {
        cJSON_Delete(item);
        v->failed = true;
    }
}

char *ted_config_json(const ted_config *config)
{
    if (!config)
        return NULL;
    json_visit v = {cJSON_CreateObject(), false};
    if (!v.root)
        return NULL;
    ted_config_visit(config, add_key, &v);
    char *text = v.failed ? NULL : cJSON_PrintUnformatted(v.root);
    cJSON_Delete(v.root);
    return text;
}
